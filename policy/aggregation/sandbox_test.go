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
status := {"n": count([x | some x in numbers.range(1, 100000000); x % 7 == 0])}
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

func TestSandboxCapabilities(t *testing.T) {
	c := SandboxCapabilities()
	have := map[string]bool{}
	for _, b := range c.Builtins {
		have[b.Name] = true
	}
	for _, name := range []string{"http.send", "net.lookup_ip_addr", "net.cidr_contains", "time.now_ns", "opa.runtime", "rand.intn", "uuid.rfc4122",
		"json.match_schema", "json.verify_schema", "crypto.x509.parse_and_verify_certificates", "crypto.x509.parse_and_verify_certificates_with_options", "io.jwt.decode_verify"} {
		if have[name] {
			t.Errorf("%s is allowed", name)
		}
	}
	for _, name := range []string{"count", "object.get", "startswith", "time.parse_rfc3339_ns", "numbers.range"} {
		if !have[name] {
			t.Errorf("%s is missing", name)
		}
	}
}
