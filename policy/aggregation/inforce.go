package aggregation

import "k8s.io/apimachinery/pkg/runtime/schema"

// Standing is where an installed (valid) AggregationPolicy stands: of several valid policies for
// one kind, the one with the smallest name is in force (docs/aggregation.md "Which policy is in
// force").
type Standing struct {
	Name    string           // the policy's name
	Target  schema.GroupKind // the kind it targets
	InForce string           // the name of the policy in force for Target: Name itself, or the one that supersedes it
}

// Superseded reports whether another policy is in force for the policy's kind.
func (s Standing) Superseded() bool { return s.InForce != s.Name }

// PolicyStanding returns the standing of the installed policy name; ok is false when no valid
// policy of that name is installed (none was given, it was removed, or it was rejected).
func (e *Engine) PolicyStanding(name string) (s Standing, ok bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	p := e.policies[name]
	if p == nil {
		return Standing{}, false
	}
	return Standing{Name: name, Target: p.gk, InForce: e.inForce[p.gk]}, true
}

// PolicyInForce returns the name of the user policy in force for gk, "" when none is (the kind's
// Lua health check, built-in module or the generic one applies).
func (e *Engine) PolicyInForce(gk schema.GroupKind) string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.inForce[gk]
}

// Superseded returns the number of installed policies that are not in force because another
// policy for their kind has a smaller name.
func (e *Engine) Superseded() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.policies) - len(e.inForce)
}
