package faults

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

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
	// Let statusfold act on the stream, then check the other controller's fields.
	time.Sleep(3 * time.Second)
	u, err := deployments.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
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
