package aggregation

import (
	"strings"
	"testing"
	"time"
)

func TestBounds(t *testing.T) {
	wecs := []WEC{{Name: "a", Status: map[string]any{"n": int64(1)}}, {Name: "b", Status: map[string]any{"n": int64(2)}}}
	t.Run("time", func(t *testing.T) {
		e := newEngine(t, WithTimeout(50*time.Millisecond))
		if errs := e.SetPolicy(policy("slow", "Widget", `package slow
status := {"n": count([x | r := numbers.range(1, 1000); some i in r; some j in r; some k in r; x := i * j * k])}
`)); len(errs) > 0 {
			t.Fatal(errs)
		}
		start := time.Now()
		_, err := e.Returned(gkWidget, map[string]any{}, wecs)
		if err == nil || !strings.Contains(err.Error(), "exceeded 50ms") {
			t.Fatalf("err = %v, want a time-bound error", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("evaluation was not stopped: %s", d)
		}
	})
	t.Run("output size", func(t *testing.T) {
		e := newEngine(t, WithMaxOutputBytes(1000))
		if errs := e.SetPolicy(policy("big", "Widget", `package big
status := {"s": concat("", [x | some i in numbers.range(1, 2000); x := "x"])}
`)); len(errs) > 0 {
			t.Fatal(errs)
		}
		_, err := e.Returned(gkWidget, map[string]any{}, wecs)
		if err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes") {
			t.Fatalf("err = %v, want an output-size error", err)
		}
	})
}

// TestSandboxCapabilities: the sandbox keeps exactly AllowedBuiltins, each of which this OPA
// version has; everything with I/O, the clock, randomness, templates or unbounded work is out.
func TestSandboxCapabilities(t *testing.T) {
	c := SandboxCapabilities()
	have := map[string]bool{}
	for _, b := range c.Builtins {
		have[b.Name] = true
	}
	for name := range allowed {
		if !have[name] && name != "assign" && name != "eq" {
			t.Errorf("%s is allowed but this OPA version does not have it", name)
		}
	}
	for _, name := range []string{"http.send", "net.lookup_ip_addr", "net.cidr_contains", "time.now_ns", "opa.runtime", "rand.intn",
		"uuid.rfc4122", "uuid.parse", "json.match_schema", "json.verify_schema", "crypto.sha256", "crypto.x509.parse_and_verify_certificates",
		"io.jwt.decode_verify", "io.jwt.encode_sign", "strings.render_template", "glob.match", "regex.globs_match", "regex.replace",
		"bits.lsh", "units.parse", "yaml.unmarshal", "json.patch", "graph.reachable_paths", "trace", "print", "internal.print",
		"providers.aws.sign_req", "rego.parse_module", "graphql.parse", "time.format", "time.date", "semver.compare", "base64.decode"} {
		if have[name] {
			t.Errorf("%s is allowed", name)
		}
	}
	if len(c.AllowNet) != 0 {
		t.Errorf("allow_net = %v", c.AllowNet)
	}
}
