package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/test/load"
)

// TestConflictingStatusWriter has another controller own fields of a workload object's .status
// — one statusfold never sets (terminatingReplicas) and one statusfold's aggregate does set
// (collisionCount, taken over with force) —
// and requires statusfold never to overwrite them while updates stream in, while it keeps
// serving every other object.
func TestConflictingStatusWriter(t *testing.T) {
	cp, fx := setup(t, 8, 4, 2)
	ctx := context.Background()
	startManager(t, cp)
	requireConverged(t, cp, fx, 60*time.Second)

	deployments := cp.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(load.ObjectNamespace)
	const victim = 0 // a multi-WEC object: statusfold writes its status
	name := load.ObjectName(victim)
	cur, err := deployments.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// collisionCount may not decrease: take a value statusfold's maximum cannot reach in this test.
	collisions, _, _ := unstructured.NestedInt64(cur.Object, "status", "collisionCount")
	theirs := collisions + 1_000_000
	apply := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": load.ObjectNamespace},
		"status": map[string]any{
			"collisionCount": theirs, "terminatingReplicas": int64(7),
			"conditions": []any{map[string]any{"type": "ExternalCheck", "status": "True", "reason": "Other"}},
		},
	}
	body, _ := json.Marshal(apply)
	force := true
	if _, err := deployments.Patch(ctx, name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: "other-controller", Force: &force}, "status"); err != nil {
		t.Fatalf("the other controller's apply: %v", err)
	}

	// A third of the updates go to the victim. Every write carries a new, larger collisionCount
	// (the load fixture's sequence number), so statusfold's maximum would differ from theirs.
	rng := rand.New(rand.NewPCG(5, 6))
	writeRandom(t, fx, rng, 300, func() int {
		if rng.IntN(3) == 0 {
			return victim
		}
		return rng.IntN(fx.Objects)
	}, 4)
	// Then check the other controller's fields, once statusfold has returned the victim's status
	// for the stream's last update: its returned status equals a fresh aggregate of the final
	// inputs in every field but the other controller's. Each update of the victim carries a later
	// Progressing condition, which the aggregate copies, so the status shows the write made for
	// the victim's last update (a later evaluation of the same inputs writes nothing new). One
	// apply writes all its fields at once: had that write, or any before it, taken the other
	// controller's fields or removed them, that shows now too.
	u := requireReturnedExcept(t, cp, fx, victim, withoutOtherControllerFields, 60*time.Second)
	for field, want := range map[string]int64{"collisionCount": theirs, "terminatingReplicas": 7} {
		got, _, _ := unstructured.NestedInt64(u.Object, "status", field)
		if got != want {
			t.Errorf("status.%s = %d, want the other controller's %d", field, got, want)
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	found := false
	for _, c := range conds {
		if cm, _ := c.(map[string]any); cm["type"] == "ExternalCheck" && cm["reason"] == "Other" {
			found = true
		}
	}
	if !found {
		t.Errorf("the other controller's ExternalCheck condition is gone: %v", conds)
	}
	// Every other object still converges.
	requireConvergedExcept(t, cp, fx, victim, 60*time.Second)
}

// withoutOtherControllerFields is a copy of a Deployment status without what the other controller
// of TestConflictingStatusWriter owns: collisionCount, terminatingReplicas and its ExternalCheck
// condition.
func withoutOtherControllerFields(status map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range status {
		out[k] = v
	}
	delete(out, "collisionCount")
	delete(out, "terminatingReplicas")
	if conds, ok := out["conditions"].([]any); ok {
		var kept []any
		for _, c := range conds {
			if cm, _ := c.(map[string]any); cm["type"] != "ExternalCheck" {
				kept = append(kept, c)
			}
		}
		out["conditions"] = kept
	}
	return out
}

// requireReturnedExcept waits until the returned status of object j, without what omit takes out,
// equals a fresh evaluation of the current inputs without the same, and returns the object then.
func requireReturnedExcept(t *testing.T, cp *framework.ControlPlane, fx *load.Fixture, j int, omit func(map[string]any) map[string]any, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	name := load.ObjectName(j)
	var obj *unstructured.Unstructured
	var diff string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		exp, err := computeExpected(ctx, t, cp.Client, fx)
		if err != nil {
			return false, err
		}
		obj = &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		if err := cp.Client.Get(ctx, client.ObjectKey{Namespace: load.ObjectNamespace, Name: name}, obj); err != nil {
			return false, err
		}
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		got, want := typedDeploymentStatus(omit(status)), typedDeploymentStatus(omit(exp.returned[name]))
		if aggregation.SameJSON(got, want) {
			return true, nil
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		diff = fmt.Sprintf("\n got %s\nwant %s", g, w)
		return false, nil
	})
	if err != nil {
		t.Fatalf("the returned status of %s does not reflect the last update: %v%s", name, err, diff)
	}
	return obj
}
