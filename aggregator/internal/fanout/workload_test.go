package fanout

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

var cmRes = resources.ResourceInfo{GVR: schema.GroupVersionResource(cmGVR), Kind: "ConfigMap", Namespaced: true}

// workload is the object ns/name of info's kind at resourceVersion rv and generation gen.
func workload(info resources.ResourceInfo, name, rv string, gen int64, labels map[string]string) client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(info.GVK())
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetResourceVersion(rv)
	u.SetGeneration(gen)
	u.SetLabels(labels)
	return u
}

// policySelecting is a BindingPolicy of Deployments selected by the label key=v.
func policySelecting(name, key string) *controlv1alpha1.BindingPolicy {
	apps := "apps"
	return &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: controlv1alpha1.BindingPolicySpec{Downsync: []controlv1alpha1.DownsyncPolicyClause{{
			DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{APIGroup: &apps, Resources: []string{"deployments"},
				ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{key: "v"}}}}}}}}
}

// TestWorkloadEvents: a workload object's change queues the object, and re-resolves the policies
// that may select it — at once when selection may change, else after a delay that is shorter for
// a status-only change or the echo of statusfold's own write.
func TestWorkloadEvents(t *testing.T) {
	app := func(v string) map[string]string { return map[string]string{"app": v} }
	counted := map[string]string{"app": "v", rules.LabelExecutingCount: "2"}
	cases := []struct {
		name              string
		extra             []client.Object
		ownRV             string // the resourceVersion of statusfold's last write of the object ("": none)
		info              resources.ResourceInfo
		o, n              client.Object
		objects, policies []string
	}{
		{name: "status only: queued, its Binding's policy refreshed after the short delay", info: deployRes,
			o: workload(deployRes, "d", "1", 1, app("v")), n: workload(deployRes, "d", "2", 1, app("v")),
			objects: []string{keyD}, policies: []string{"b1 after 1s"}},
		{name: "new generation: queued, refreshed after the delay", info: deployRes,
			o: workload(deployRes, "d", "1", 1, app("v")), n: workload(deployRes, "d", "2", 2, app("v")),
			objects: []string{keyD}, policies: []string{"b1 after 5s"}},
		{name: "another writer's change of a kind without status: queued, refreshed after the delay", info: cmRes,
			o: workload(cmRes, "c", "1", 0, app("v")), n: workload(cmRes, "c", "2", 0, app("v")),
			objects: []string{keyC}, policies: []string{"b1 after 5s"}},
		{name: "echo of statusfold's own write: not queued, refreshed after the short delay", info: cmRes, ownRV: "2",
			o: workload(cmRes, "c", "1", 0, app("v")), n: workload(cmRes, "c", "2", 0, app("v")),
			policies: []string{"b1 after 1s"}},
		{name: "another label changed: the policies that may select it re-resolved at once", info: deployRes,
			o: workload(deployRes, "d", "1", 1, app("v")), n: workload(deployRes, "d", "2", 1, app("w")),
			objects: []string{keyD}, policies: []string{"bp"}},
		{name: "only the executing count changed, no policy selects on it: refreshed", info: deployRes,
			o: workload(deployRes, "d", "1", 1, app("v")), n: workload(deployRes, "d", "2", 1, counted),
			objects: []string{keyD}, policies: []string{"b1 after 1s"}},
		{name: "only the executing count changed, a policy selects on it: re-resolved at once", info: deployRes,
			extra: []client.Object{policySelecting("bp2", rules.LabelExecutingCount)},
			o:     workload(deployRes, "d", "1", 1, app("v")), n: workload(deployRes, "d", "2", 1, counted),
			objects: []string{keyD}, policies: []string{"bp", "bp2"}},
		{name: "resync: queued, no policy", info: deployRes,
			o: workload(deployRes, "d", "1", 1, app("v")), n: workload(deployRes, "d", "1", 1, app("v")),
			objects: []string{keyD}},
		{name: "new object no Binding lists, without a return label: not queued, the policies resolved", info: deployRes,
			n: workload(deployRes, "z", "1", 1, app("v")), policies: []string{"bp"}},
		{name: "new object with a return label: queued", info: deployRes,
			n: workload(deployRes, "z", "1", 1, counted), objects: []string{"apps/deployments/ns/z"}, policies: []string{"bp"}},
		{name: "new object a Binding lists: queued", info: deployRes,
			n: workload(deployRes, "d", "1", 1, app("v")), objects: []string{keyD}, policies: []string{"bp"}},
		{name: "deleted: queued, the policies resolved", info: deployRes,
			o: workload(deployRes, "d", "1", 1, app("v")), objects: []string{keyD}, policies: []string{"bp"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := append(seeded(), policySelecting("bp", "app"))
			x := newHarness(t, append(objs, tc.extra...)...)
			if tc.ownRV != "" {
				key := rules.ObjectKey{Group: tc.info.GVR.Group, Resource: tc.info.GVR.Resource, Namespace: "ns", Name: tc.n.GetName()}
				x.ownWrite(key.String(), tc.ownRV)
			}
			x.h.onWorkload(tc.info)(tc.o, tc.n)
			if !slices.Equal(x.objects.items, tc.objects) {
				t.Errorf("objects queued %q, want %q", x.objects.items, tc.objects)
			}
			if !slices.Equal(sorted(x.policies.items), tc.policies) {
				t.Errorf("policies queued %q, want %q", x.policies.items, tc.policies)
			}
		})
	}
}
