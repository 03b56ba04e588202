package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// create creates obj, failing t unless it is created or already there.
func (e *entryEnv) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := e.cp.Client.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// widgetRef is the WorkStatus source of the case's Widget.
func widgetRef(name string) controlv1alpha1.SourceRef {
	return controlv1alpha1.SourceRef{Group: "example.io", Version: "v1", Resource: "widgets", Kind: "Widget",
		Namespace: caseNamespace, Name: name}
}

// statusJSON is what a case's WEC reports, as JSON (nil: nothing).
func statusJSON(w WECInput) ([]byte, error) {
	if w.StatusJSON != "" {
		return []byte(w.StatusJSON), nil
	}
	if w.Status == nil {
		return nil, nil
	}
	return json.Marshal(w.Status)
}

// report writes what the case's WEC w reports as the WorkStatus of the case's Widget in the
// mailbox namespace of WEC wec: created, then its status written through the status
// subresource, as the agent does. A WEC without a status writes nothing. The apiserver's refusal
// (e.g. a status above its request size limit) is returned, and so is a status that JSON cannot
// carry (NaN).
func (e *entryEnv) report(ctx context.Context, t *testing.T, c entryCase, wec string, w WECInput) error {
	t.Helper()
	raw, err := statusJSON(w)
	if err != nil {
		return fmt.Errorf("no JSON for the status, so no WEC can report it: %w", err)
	}
	if raw == nil {
		return nil
	}
	details := controlv1alpha1.StatusDetails{LastGeneration: 1, LastGenerationIsApplied: true}
	if w.Details != nil {
		if err := into(w.Details, &details); err != nil {
			t.Fatalf("%s: wec %s details: %v", c.Name, w.Name, err)
		}
	}
	ws := &controlv1alpha1.WorkStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: wec, Name: "widgets-" + c.name,
			Labels: map[string]string{controlv1alpha1.LabelOriginWDSName: wdsName}},
		Spec:          controlv1alpha1.WorkStatusSpec{SourceRef: widgetRef(c.name)},
		StatusDetails: details,
	}
	if err := e.cp.Client.Create(ctx, ws); err != nil {
		return err
	}
	ws.Status = controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: raw}}
	return e.cp.Client.Status().Update(ctx, ws)
}

// bindingPolicy binds the case's Widget to the first n WECs, with the given collectors, and asks
// for its status back from all of them when multi is set.
func bindingPolicy(name string, n int, collectors []string, multi bool) *controlv1alpha1.BindingPolicy {
	wecs := make([]string, n)
	for i := range wecs {
		wecs[i] = wecName(i)
	}
	group := "example.io"
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "name", Operator: metav1.LabelSelectorOpIn, Values: wecs}}}}
	cl := controlv1alpha1.DownsyncPolicyClause{}
	cl.APIGroup = &group
	cl.Resources = []string{"widgets"}
	cl.Namespaces = []string{caseNamespace}
	cl.ObjectNames = []string{name}
	cl.StatusCollectors = collectors
	cl.WantMultiWECReportedState = multi
	bp.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{cl}
	return bp
}

// cleanup deletes what the case created, so that later cases do not evaluate its objects again.
func (e *entryEnv) cleanup(ctx context.Context, t *testing.T, c entryCase) {
	t.Helper()
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion("example.io/v1")
	widget.SetKind("Widget")
	widget.SetNamespace(caseNamespace)
	widget.SetName(c.name)
	objs := []client.Object{&controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: c.name}}, widget}
	for i := range min(len(c.WECs), maxControllerWECs) {
		objs = append(objs, &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: wecName(i), Name: "widgets-" + c.name}})
	}
	for j := range c.Collectors {
		objs = append(objs, &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", c.name, j)}})
	}
	if c.kind == kindPolicy {
		objs = append(objs, c.clusterObject())
	}
	for _, o := range objs {
		if err := e.cp.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("%s: deleting %s: %v", c.Name, o.GetName(), err)
		}
	}
}

// removePolicies deletes the AggregationPolicies accepted at admission and waits until they are
// gone: one policy per kind is in force (the first by name), so each policy case of the
// controller creates its own again, alone for the Widget kind.
func (e *entryEnv) removePolicies(ctx context.Context, t *testing.T, cases []entryCase, accepted map[string]bool) {
	t.Helper()
	for _, c := range cases {
		if c.kind != kindPolicy || !accepted[c.Name] {
			continue
		}
		o := c.clusterObject()
		if err := e.cp.Client.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("%s: deleting its AggregationPolicy: %v", c.Name, err)
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, endWait, true, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(e.cp.Client.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopy())), nil
		})
		if err != nil {
			t.Errorf("%s: its AggregationPolicy is not gone after %s", c.Name, endWait)
		}
	}
}
