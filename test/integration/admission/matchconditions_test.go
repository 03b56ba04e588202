package admission

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks"
)

// TestMetadataUpdatesSkipTheWebhook: with statusfold's webhook configurations (failurePolicy
// Fail) pointing at a port where nothing listens, the apiserver still admits label-only updates
// of a BindingPolicy and of a StatusCollector (KubeStellar's own label writes must not depend on
// statusfold being up: the matchConditions skip them), and refuses spec changes and creates.
func TestMetadataUpdatesSkipTheWebhook(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ctx := context.Background()
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
		Spec: controlv1alpha1.BindingPolicySpec{ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}}
	sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "count"},
		Spec: controlv1alpha1.StatusCollectorSpec{Limit: 5, CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: "COUNT"}}}}
	for _, obj := range []client.Object{bp, sc} {
		if err := cp.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	closed := "https://127.0.0.1:" + strconv.Itoa(framework.FreePort(t))
	v, m := webhooks.Configurations(webhooks.URLClientConfig(closed, nil))
	for _, obj := range []client.Object{v, m} {
		if err := cp.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	// The configurations are in force once a create is refused.
	if wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		probe := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
		err := cp.Client.Create(ctx, probe, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "failed calling webhook"), nil
	}) != nil {
		t.Fatal("webhook configurations not in force")
	}

	for _, obj := range []client.Object{bp, sc} {
		labelled := obj.DeepCopyObject().(client.Object)
		if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(obj), labelled); err != nil {
			t.Fatal(err)
		}
		labelled.SetLabels(map[string]string{"kubestellar.io/touched": "yes"})
		if err := cp.Client.Update(ctx, labelled); err != nil {
			t.Errorf("label-only update of %T with the webhook down: %v", obj, err)
		}
	}
	respec := &controlv1alpha1.BindingPolicy{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(bp), respec); err != nil {
		t.Fatal(err)
	}
	respec.Spec.ClusterSelectors[0].MatchLabels["a"] = "c"
	if err := cp.Client.Update(ctx, respec); err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("spec update with the webhook down: %v, want a refusal from the webhook call", err)
	}
	scSpec := &controlv1alpha1.StatusCollector{}
	if err := cp.Client.Get(ctx, client.ObjectKeyFromObject(sc), scSpec); err != nil {
		t.Fatal(err)
	}
	scSpec.Spec.Limit = 7
	if err := cp.Client.Update(ctx, scSpec); err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Errorf("collector spec update with the webhook down: %v, want a refusal from the webhook call", err)
	}
}
