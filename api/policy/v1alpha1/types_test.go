package v1alpha1_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/test/framework"
)

const example = "testdata/aggregationpolicy.yaml"

// TestStrictDecode decodes the documented example strictly (a misspelt field fails) and checks
// that it passes the admission check.
func TestStrictDecode(t *testing.T) {
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var p policyv1alpha1.AggregationPolicy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	if p.Spec.Target.Kind != "Deployment" || len(p.Spec.Examples) != 1 || len(p.Spec.Examples[0].WECs) != 2 {
		t.Fatalf("decoded %+v", p.Spec)
	}
	if errs := aggregation.ValidatePolicy(&p); len(errs) > 0 {
		t.Fatal(errs)
	}
}

// TestCRDAcceptsExample applies the example to a real apiserver with kubectl (strict field
// validation), reads it back and checks that the stored policy still passes the admission check.
func TestCRDAcceptsExample(t *testing.T) {
	framework.RequireIntegration(t)
	cp := framework.RunControlPlane(t)
	ctx := context.Background()
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := cp.Kubectl(ctx, data, "apply", "--validate=strict", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, stderr)
	}
	out, stderr, err := cp.Kubectl(ctx, nil, "get", "ap", "deployments-sum-ready", "-o", "json")
	if err != nil {
		t.Fatalf("kubectl get: %v: %s", err, stderr)
	}
	var p policyv1alpha1.AggregationPolicy
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if errs := aggregation.ValidatePolicy(&p); len(errs) > 0 {
		t.Fatalf("stored policy: %v", errs)
	}
	bad := []byte(`apiVersion: policy.statusfold.dev/v1alpha1
kind: AggregationPolicy
metadata: {name: no-kind}
spec:
  target: {group: apps}
  rego: "package x"
`)
	if _, stderr, err := cp.Kubectl(ctx, bad, "apply", "-f", "-"); err == nil {
		t.Fatal("a policy without spec.target.kind was accepted")
	} else if want := "spec.target.kind: Required value"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q lacks %q", stderr, want)
	}
}
