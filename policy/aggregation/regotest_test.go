package aggregation

import (
	"context"
	"testing"
)

// TestBuiltinRegoTests runs the Rego unit tests beside the built-in modules (also run by
// `statusfold policy test`).
func TestBuiltinRegoTests(t *testing.T) {
	results, err := RunRegoTests(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) < 12 {
		t.Fatalf("only %d Rego tests found", len(results))
	}
	for _, r := range results {
		if !r.Pass() {
			t.Errorf("%s.%s: %v %v", r.Package, r.Name, r.Fail, r.Error)
		}
	}
}
