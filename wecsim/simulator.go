package wecsim

import (
	"fmt"
	"hash/fnv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Object is what the simulator needs to know about a workload object in the WDS.
type Object struct {
	Group, Version, Resource, Kind string
	Namespace, Name                string
	// Generation is the WDS object's metadata.generation.
	Generation int64
	// Content is the whole WDS object (unstructured), for its spec.
	Content map[string]any
}

// Key identifies the object; it is stable across generations.
func (o Object) Key() string {
	return o.Group + "/" + o.Resource + "/" + o.Namespace + "/" + o.Name
}

// Report is one WEC's reported state of one object, as the WEC-side agent puts it into a
// WorkStatus.
type Report struct {
	// Status is the WEC copy's .status.
	Status map[string]any
	// LastGeneration is the WDS generation that last reached the WEC.
	LastGeneration int64
	// LastGenerationIsApplied says whether it was applied there.
	LastGenerationIsApplied bool
	// WECGeneration is the WEC copy's own metadata.generation.
	WECGeneration int64
}

// Simulator turns a Scenario into reported states. It keeps per (object, WEC) state between
// calls, so call Observe once per pair and tick, with ticks that do not go backwards. It does no
// I/O and reads no clock: timestamps in the statuses are the `now` given to Observe.
type Simulator struct {
	Scenario Scenario
	wecs     map[string]WEC
	pairs    map[string]*pairState
}

// NewSimulator returns a simulator for the scenario.
func NewSimulator(sc Scenario) *Simulator {
	wecs := make(map[string]WEC, len(sc.WECs))
	for _, w := range sc.WECs {
		wecs[w.Name] = w
	}
	return &Simulator{Scenario: sc, wecs: wecs, pairs: map[string]*pairState{}}
}

type condState struct {
	status, reason, message string
	transition, update      time.Time
}

type pairState struct {
	seenGen    int64 // latest WDS generation the simulator has seen
	seenTick   int
	appliedGen int64 // WDS generation the WEC has applied; 0 = none yet
	wecGen     int64 // the WEC copy's own generation
	startTick  int   // tick at which appliedGen was applied
	startTime  time.Time
	doneTime   time.Time
	conds      map[string]*condState
}

func (p *pairState) setCond(typ, status, reason, message string, now time.Time) {
	c, ok := p.conds[typ]
	if !ok {
		c = &condState{transition: now, update: now}
		p.conds[typ] = c
	}
	if c.status != status {
		c.transition = now
	}
	if c.status != status || c.reason != reason || c.message != message {
		c.update = now
	}
	c.status, c.reason, c.message = status, reason, message
}

// conditions renders the conditions of the given types in that order; withUpdate adds
// lastUpdateTime (Deployments have it, Jobs have lastProbeTime instead).
func (p *pairState) conditions(withUpdate bool, types ...string) []any {
	var out []any
	for _, t := range types {
		c, ok := p.conds[t]
		if !ok {
			continue
		}
		m := map[string]any{
			"type": t, "status": c.status, "reason": c.reason, "message": c.message,
			"lastTransitionTime": c.transition.UTC().Format(time.RFC3339),
		}
		if withUpdate {
			m["lastUpdateTime"] = c.update.UTC().Format(time.RFC3339)
		} else {
			m["lastProbeTime"] = c.update.UTC().Format(time.RFC3339)
		}
		out = append(out, m)
	}
	return out
}

// Simulated reports whether the simulator writes reported state for objects of this kind.
func Simulated(group, kind string) bool {
	switch {
	case group == "apps" && kind == "Deployment", group == "batch" && kind == "Job", group == "" && kind == "Pod":
		return true
	}
	return false
}

// Observe returns the WEC's reported state of obj at tick, and false when the WEC has nothing
// to report yet (the object has not reached it, or its kind is not simulated).
func (s *Simulator) Observe(obj Object, wecName string, tick int, now time.Time) (Report, bool) {
	if !Simulated(obj.Group, obj.Kind) {
		return Report{}, false
	}
	wec, ok := s.wecs[wecName]
	if !ok {
		return Report{}, false
	}
	key := obj.Key() + "@" + wecName
	p := s.pairs[key]
	if p == nil {
		p = &pairState{conds: map[string]*condState{}}
		s.pairs[key] = p
	}
	if obj.Generation != p.seenGen {
		p.seenGen, p.seenTick = obj.Generation, tick
	}
	delivery := p.seenTick
	if wec.Role == RoleLagging {
		delivery += s.Scenario.LagTicks
	}
	if p.appliedGen != p.seenGen && tick >= delivery {
		p.appliedGen = p.seenGen
		p.wecGen++
		p.startTick, p.startTime = tick, now
		p.doneTime = time.Time{}
	}
	if p.appliedGen == 0 {
		return Report{}, false
	}
	elapsed := tick - p.startTick
	var status map[string]any
	switch obj.Kind {
	case "Deployment":
		status = s.deploymentStatus(obj, wec, p, elapsed, now)
	case "Job":
		status = s.jobStatus(obj, wec, p, elapsed, now)
	case "Pod":
		status = podStatus(wec, p, elapsed, now)
	}
	return Report{Status: status, LastGeneration: p.appliedGen, LastGenerationIsApplied: true, WECGeneration: p.wecGen}, true
}

func specInt(obj Object, def int64, path ...string) int64 {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Content, append([]string{"spec"}, path...)...)
	if err != nil || !found {
		return def
	}
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return def
}

// putCount sets a count field the way the Kubernetes controllers do: zero is omitted.
func putCount(m map[string]any, k string, v int64) {
	if v != 0 {
		m[k] = v
	}
}

func replicaSetName(name string, wecGen int64) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", name, wecGen)
	return fmt.Sprintf("%s-%08x", name, h.Sum32())
}

func (s *Simulator) deploymentStatus(obj Object, wec WEC, p *pairState, elapsed int, now time.Time) map[string]any {
	want := specInt(obj, 1, "replicas")
	reachable := want
	if wec.Role == RoleFailing {
		reachable = want / 2
	}
	updated := min(reachable, int64(wec.Speed)*int64(elapsed))
	available := updated
	if p.wecGen > 1 {
		// Later rollouts keep the old ReplicaSet's pods serving until they are replaced.
		available = want
	}
	maxUnavailable := want / 4
	rs := replicaSetName(obj.Name, p.wecGen)
	if available >= want-maxUnavailable {
		p.setCond("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", now)
	} else {
		p.setCond("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", now)
	}
	switch {
	case updated == want && available == want:
		p.setCond("Progressing", "True", "NewReplicaSetAvailable", fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs), now)
	case wec.Role == RoleFailing && elapsed >= s.Scenario.DeadlineTicks:
		p.setCond("Progressing", "False", "ProgressDeadlineExceeded", fmt.Sprintf("ReplicaSet %q has timed out progressing.", rs), now)
	default:
		p.setCond("Progressing", "True", "ReplicaSetUpdated", fmt.Sprintf("ReplicaSet %q is progressing.", rs), now)
	}
	st := map[string]any{"observedGeneration": p.wecGen}
	putCount(st, "replicas", want)
	putCount(st, "updatedReplicas", updated)
	putCount(st, "readyReplicas", available)
	putCount(st, "availableReplicas", available)
	putCount(st, "unavailableReplicas", want-available)
	st["conditions"] = p.conditions(true, "Available", "Progressing")
	return st
}

func (s *Simulator) jobStatus(obj Object, wec WEC, p *pairState, elapsed int, now time.Time) map[string]any {
	completions := specInt(obj, 1, "completions")
	parallelism := specInt(obj, 1, "parallelism")
	backoff := specInt(obj, 6, "backoffLimit")
	st := map[string]any{"startTime": p.startTime.UTC().Format(time.RFC3339)}
	var active, succeeded, failed int64
	if wec.Role == RoleFailing {
		failed = min(backoff+1, int64(elapsed))
		if failed > backoff {
			p.setCond("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit", now)
			p.setCond("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit", now)
		} else {
			active = 1
		}
	} else {
		succeeded = min(completions, int64(wec.Speed)*int64(elapsed))
		if succeeded == completions {
			if p.doneTime.IsZero() {
				p.doneTime = now
			}
			p.setCond("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods", now)
			p.setCond("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods", now)
			st["completionTime"] = p.doneTime.UTC().Format(time.RFC3339)
		} else {
			active = min(parallelism, completions-succeeded)
		}
	}
	putCount(st, "active", active)
	st["ready"] = active
	putCount(st, "succeeded", succeeded)
	putCount(st, "failed", failed)
	st["terminating"] = int64(0)
	st["uncountedTerminatedPods"] = map[string]any{}
	if conds := p.conditions(false, "FailureTarget", "Failed", "SuccessCriteriaMet", "Complete"); len(conds) > 0 {
		st["conditions"] = conds
	}
	return st
}

func podStatus(wec WEC, p *pairState, elapsed int, now time.Time) map[string]any {
	phase := "Pending"
	p.setCond("PodScheduled", "True", "", "", now)
	if elapsed >= 1 && wec.Role != RoleFailing {
		phase = "Running"
		p.setCond("Ready", "True", "", "", now)
	} else {
		p.setCond("Ready", "False", "ContainersNotReady", "containers with unready status: [main]", now)
	}
	conds := p.conditions(false, "PodScheduled", "Ready")
	for _, c := range conds {
		m := c.(map[string]any)
		delete(m, "lastProbeTime")
		if m["reason"] == "" {
			delete(m, "reason")
			delete(m, "message")
		}
	}
	return map[string]any{"phase": phase, "startTime": p.startTime.UTC().Format(time.RFC3339), "conditions": conds}
}
