package policies

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

func bindingOf(spec controlv1alpha1.BindingSpec, conds []controlv1alpha1.BindingPolicyCondition, owners ...metav1.OwnerReference) *controlv1alpha1.Binding {
	return &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "bp", UID: "uid-b", OwnerReferences: owners}, Spec: spec,
		Status: controlv1alpha1.BindingStatus{Conditions: conds}}
}

func withStatus(bp *controlv1alpha1.BindingPolicy, conds []controlv1alpha1.BindingPolicyCondition) *controlv1alpha1.BindingPolicy {
	bp.Status = controlv1alpha1.BindingPolicyStatus{Conditions: conds, ObservedGeneration: bp.Generation}
	return bp
}

// TestReconcilePolicy: a BindingPolicy is resolved into its Binding (internal mode) and its
// StatusCollectorsAvailable condition kept on both, each written only when it changed.
func TestReconcilePolicy(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "control.kubestellar.io/v1alpha1", Kind: "BindingPolicy", Name: "bp", UID: "uid-bp",
		Controller: new(true), BlockOwnerDeletion: new(true)}
	cases := []struct {
		name     string
		external bool
		compiler fakeCompiler
		objs     []client.Object
		writes   []string
		cond     *controlv1alpha1.BindingPolicyCondition // the policy's condition written (nil: not written)
	}{
		{name: "no Binding yet: its spec written, then the conditions", objs: world(policy()),
			writes: []string{"Binding main", "BindingPolicy status", "Binding status"}, cond: &available()[0]},
		{name: "Binding and conditions current: nothing written",
			objs: world(withStatus(policy(), available()), bindingOf(resolved(), available(), owner))},
		{name: "external resolution: no Binding write, the conditions only", external: true,
			objs:   world(policy(), bindingOf(resolved(), nil)),
			writes: []string{"BindingPolicy status", "Binding status"}, cond: &available()[0]},
		{name: "external resolution without a Binding: the policy's condition only", external: true, objs: world(policy()),
			writes: []string{"BindingPolicy status"}, cond: &available()[0]},
		{name: "collectors missing and invalid: named in a False condition",
			compiler: fakeCompiler{"bad": field.ErrorList{field.Required(field.NewPath("spec", "select"), "")}},
			objs: world(withStatus(policy("bad", "good", "missing"), available()), bindingOf(resolved("bad", "good", "missing"), nil, owner),
				&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "bad"}},
				&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "good"}}),
			writes: []string{"BindingPolicy status", "Binding status"},
			cond: &controlv1alpha1.BindingPolicyCondition{Type: controlv1alpha1.ConditionStatusCollectorsAvailable, Status: "False",
				Reason: "CollectorsUnavailable", Message: "missing: missing; invalid: bad"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(!tc.external, tc.compiler, tc.objs...)
			if err := h.r.Reconcile(context.Background(), "bp"); err != nil {
				t.Fatal(err)
			}
			var writes []string
			for _, w := range h.api.Writes {
				sub := w.Sub
				if sub == "" {
					sub = "main"
				}
				writes = append(writes, w.Obj.GetKind()+" "+sub)
				if !w.Force || w.Manager != rules.FieldManager || w.Validation != "Ignore" {
					t.Errorf("write %+v: want a forced apply by %s with fieldValidation=Ignore", w, rules.FieldManager)
				}
				switch writes[len(writes)-1] {
				case "Binding main":
					checkBinding(t, w.Obj.Object, owner)
				case "BindingPolicy status":
					checkCondition(t, w.Obj.Object, tc.cond)
				}
			}
			if !slices.Equal(writes, tc.writes) {
				t.Errorf("writes %q, want %q", writes, tc.writes)
			}
		})
	}
}

// checkBinding checks that a Binding write holds the resolved spec, owned by the policy.
func checkBinding(t *testing.T, obj map[string]any, owner metav1.OwnerReference) {
	t.Helper()
	var b controlv1alpha1.Binding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &b); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(b.Spec, resolved()) {
		t.Errorf("Binding spec\n got %+v\nwant %+v", b.Spec, resolved())
	}
	if !equality.Semantic.DeepEqual(b.OwnerReferences, []metav1.OwnerReference{owner}) {
		t.Errorf("Binding owners %+v, want %+v", b.OwnerReferences, owner)
	}
}

// checkCondition checks a BindingPolicy status write's condition, its time aside.
func checkCondition(t *testing.T, obj map[string]any, want *controlv1alpha1.BindingPolicyCondition) {
	t.Helper()
	var bp controlv1alpha1.BindingPolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &bp); err != nil {
		t.Fatal(err)
	}
	if len(bp.Status.Conditions) != 1 || want == nil {
		t.Fatalf("conditions %+v, want %+v", bp.Status.Conditions, want)
	}
	got := bp.Status.Conditions[0]
	if got.Type != want.Type || got.Status != want.Status || got.Reason != want.Reason || got.Message != want.Message {
		t.Errorf("condition %+v, want %+v", got, *want)
	}
	if bp.Status.ObservedGeneration != 1 {
		t.Errorf("observedGeneration %d, want 1", bp.Status.ObservedGeneration)
	}
}

// TestDeletedPolicy: the Binding of a deleted policy is deleted when statusfold resolves
// Bindings and the policy owns it; else it is left.
func TestDeletedPolicy(t *testing.T) {
	owned := metav1.OwnerReference{APIVersion: "control.kubestellar.io/v1alpha1", Kind: "BindingPolicy", Name: "bp", UID: "uid-bp"}
	otherOwner := metav1.OwnerReference{APIVersion: "control.kubestellar.io/v1alpha1", Kind: "BindingPolicy", Name: "other", UID: "uid-other"}
	cases := []struct {
		name     string
		external bool
		binding  *controlv1alpha1.Binding
		kept     bool
	}{
		{name: "owned by the policy: deleted", binding: bindingOf(resolved(), nil, owned)},
		{name: "owned by another policy: kept", binding: bindingOf(resolved(), nil, otherOwner), kept: true},
		{name: "owned by nothing: kept", binding: bindingOf(resolved(), nil), kept: true},
		{name: "external resolution: kept", external: true, binding: bindingOf(resolved(), nil, owned), kept: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(!tc.external, nil, world(tc.binding)...)
			if err := h.r.Reconcile(context.Background(), "bp"); err != nil {
				t.Fatal(err)
			}
			err := h.c.Get(context.Background(), client.ObjectKey{Name: "bp"}, &controlv1alpha1.Binding{})
			if kept := err == nil; kept != tc.kept || (err != nil && !apierrors.IsNotFound(err)) {
				t.Errorf("Binding kept: %v (%v), want %v", kept, err, tc.kept)
			}
			if len(h.api.Writes) != 0 {
				t.Errorf("writes %d, want none", len(h.api.Writes))
			}
		})
	}
}
