package aggregation

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// BuiltinFamily is a group of OPA builtins that aggregation modules may call, with the reason the
// group is in the sandbox.
type BuiltinFamily struct {
	Name     string
	Reason   string
	Builtins []string
}

// AllowedBuiltins is the sandbox: the only builtins aggregation modules (built-in and user) are
// compiled with. Each is pure (no network, clock, randomness, files or environment) and costs time
// and memory in proportion to its input, or the engine wraps it with a bound (bounds.go). Every
// other builtin of OPA — present or future — is out: a module that calls one does not compile.
var AllowedBuiltins = []BuiltinFamily{
	{"rego", "the language itself: assignment, unification, `in`", []string{
		"assign", "eq", "internal.member_2", "internal.member_3"}},
	{"comparison", "ordering counts, phases and times", []string{
		"equal", "neq", "lt", "lte", "gt", "gte"}},
	{"arithmetic", "combining counts; operands of at most 100 characters with an exponent within ±400, so results stay small", []string{
		"plus", "minus", "mul", "div", "rem", "abs", "round", "ceil", "floor"}},
	{"numbers", "iterating over index ranges; at most 100,000 numbers per range, charged to the evaluation's budget", []string{
		"numbers.range", "numbers.range_step", "to_number", "format_int"}},
	{"aggregates", "min, max, sums and counts over WECs", []string{
		"count", "sum", "product", "max", "min", "sort"}},
	{"types", "checking what a WEC reported before combining it", []string{
		"is_number", "is_string", "is_boolean", "is_array", "is_set", "is_object", "is_null", "type_name"}},
	{"arrays", "lists of conditions and ingress entries", []string{
		"array.concat", "array.slice", "array.reverse"}},
	{"sets", "unions and intersections of WEC sets", []string{
		"and", "or", "intersection", "union"}},
	{"objects", "per-field combiners, merging module rules", []string{
		"object.get", "object.keys", "object.remove", "object.filter", "object.union", "object.union_n"}},
	{"strings", "reasons, messages, revisions; output sizes checked before the string is built (no templates: strings.render_template is out)", []string{
		"concat", "contains", "startswith", "endswith", "indexof", "lower", "upper", "replace", "split", "sprintf",
		"strings.count", "strings.any_prefix_match", "strings.any_suffix_match", "strings.reverse", "substring",
		"trim", "trim_left", "trim_prefix", "trim_right", "trim_suffix", "trim_space"}},
	{"regex", "matching reasons and names; Go's RE2 is linear in the input, outputs are charged", []string{
		"regex.match", "regex.is_valid", "regex.split", "regex.find_n"}},
	{"json", "encoding and decoding values; sizes checked before the work is done", []string{
		"json.marshal", "json.unmarshal", "json.is_valid", "yaml.marshal"}},
	{"time", "comparing RFC 3339 timestamps (lastTransitionTime); no clock", []string{
		"time.parse_rfc3339_ns", "time.parse_duration_ns"}},
	{"walk", "visiting nested status documents; every path is charged", []string{
		"walk"}},
}

// allowed is AllowedBuiltins by name.
var allowed = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range AllowedBuiltins {
		for _, b := range f.Builtins {
			m[b] = true
		}
	}
	return m
}()

// SandboxCapabilities returns the OPA capabilities aggregation modules are compiled with: this OPA
// version's builtins restricted to AllowedBuiltins, and no allowed hosts.
func SandboxCapabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	kept := c.Builtins[:0:0]
	for _, b := range c.Builtins {
		if allowed[b.Name] {
			kept = append(kept, b)
		}
	}
	c.Builtins = kept
	c.AllowNet = []string{}
	return c
}
