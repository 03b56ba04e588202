package fanout

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

const (
	keyD = "apps/deployments/ns/d"
	keyE = "apps/deployments/ns/e"
	keyC = "/configmaps/ns/c"
)

// seeded are the Bindings of the WDS: b1 lists Deployment d (with collector sc) and ConfigMap c,
// b2 lists Deployment e.
func seeded() []client.Object {
	return []client.Object{
		binding("b1", "1", []string{"wec1"}, entry(deployGVR, "d", "10", "sc"), entry(cmGVR, "c", "20")),
		binding("b2", "1", []string{"wec1"}, entry(deployGVR, "e", "30")),
	}
}

func collectorGen(gen int64, rv string) *controlv1alpha1.StatusCollector {
	return &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "sc", UID: "uid-sc", Generation: gen, ResourceVersion: rv}}
}

func classifierGen(gen int64, rv string) *controlv1alpha1.ContentClassifier {
	return &controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: "deployments.v1.apps", UID: "uid-cc", Generation: gen, ResourceVersion: rv}}
}

// combinedStatus is the CombinedStatus ns/cs about Deployment ns/d, at resourceVersion rv.
func combinedStatus(rv string) *controlv1alpha1.CombinedStatus {
	return &controlv1alpha1.CombinedStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cs", ResourceVersion: rv, Labels: map[string]string{
		controlv1alpha1.LabelCombinedStatusAPIGroup: "apps", controlv1alpha1.LabelCombinedStatusResource: "deployments",
		controlv1alpha1.LabelCombinedStatusNamespace: "ns", controlv1alpha1.LabelCombinedStatusName: "d"}}}
}

// sorted returns s sorted (queue order across Bindings is the list's, not a rule).
func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// TestEventsQueueTheirKeys: each event of our kinds and of the ITS queues the keys it concerns,
// and nothing for the echo of statusfold's own write or a change that alters no evaluation.
func TestEventsQueueTheirKeys(t *testing.T) {
	ws := testutil.WireWorkStatus(t, "wec1", "d", 1, map[string]any{"replicas": 1})
	b1 := seeded()[0].(*controlv1alpha1.Binding)
	b1Later := b1.DeepCopy()
	b1Later.ResourceVersion = "2"
	b1Later.Spec.Workload.NamespaceScope[0].ResourceVersion = "11"
	b1Moved := b1Later.DeepCopy()
	b1Moved.Spec.Destinations = append(b1Moved.Spec.Destinations, controlv1alpha1.Destination{ClusterId: "wec2"})
	cases := []struct {
		name                     string
		prepare                  func(x *harness)
		event                    func(x *harness)
		objects, policies, kinds []string
		changedWECs              []string // the WECs the WEC index has as changed for the WorkStatus's object
	}{
		{name: "WorkStatus added: its object queued, its WEC changed", event: func(x *harness) { x.h.onWorkStatus(nil, ws) },
			objects: []string{"apps/deployments/default/d"}, changedWECs: []string{"wec1"}},
		{name: "Binding added: its objects and its policy", event: func(x *harness) { x.h.onBinding(nil, b1) },
			objects: []string{keyC, keyD}, policies: []string{"b1"}},
		{name: "Binding's resourceVersions only: no object, the policy re-checked", event: func(x *harness) { x.h.onBinding(b1, b1Later) },
			policies: []string{"b1"}},
		{name: "echo of statusfold's Binding write: nothing", prepare: func(x *harness) { x.ownWrite(echo.BindingWriteKey("b1"), "2") },
			event: func(x *harness) { x.h.onBinding(b1, b1Later) }},
		{name: "Binding's destinations changed: every object of the old and the new Binding (the queue coalesces)",
			event:   func(x *harness) { x.h.onBinding(b1Later, b1Moved) },
			objects: []string{keyC, keyD, keyC, keyD}, policies: []string{"b1"}},
		{name: "Binding deleted: its objects and its policy", event: func(x *harness) { x.h.onBinding(b1, nil) },
			objects: []string{keyC, keyD}, policies: []string{"b1"}},
		{name: "StatusCollector status only: its status alone",
			event: func(x *harness) { x.h.onCollector(collectorGen(1, "1"), collectorGen(1, "2")) },
			kinds: []string{"{StatusCollector sc}"}},
		{name: "StatusCollector spec changed: the objects whose Bindings name it, and their policies",
			event:   func(x *harness) { x.h.onCollector(collectorGen(1, "1"), collectorGen(2, "2")) },
			objects: []string{keyC, keyD}, policies: []string{"b1"}, kinds: []string{"{StatusCollector sc}"}},
		{name: "ContentClassifier status only: its status alone",
			event: func(x *harness) { x.h.onClassifier(classifierGen(1, "1"), classifierGen(1, "2")) },
			kinds: []string{"{ContentClassifier deployments.v1.apps}"}},
		{name: "ContentClassifier spec changed: the bound objects of its resource",
			event:   func(x *harness) { x.h.onClassifier(classifierGen(1, "1"), classifierGen(2, "2")) },
			objects: []string{keyD, keyE}, kinds: []string{"{ContentClassifier deployments.v1.apps}"}},
		{name: "echo of statusfold's CombinedStatus write: nothing",
			prepare: func(x *harness) { x.ownWrite(echo.CombinedStatusWriteKey("ns", "cs"), "7") },
			event:   func(x *harness) { x.h.onCombinedStatus(combinedStatus("6"), combinedStatus("7")) }},
		{name: "CombinedStatus changed by another writer: its object put back",
			prepare: func(x *harness) { x.ownWrite(echo.CombinedStatusWriteKey("ns", "cs"), "7") },
			event:   func(x *harness) { x.h.onCombinedStatus(combinedStatus("7"), combinedStatus("8")) },
			objects: []string{keyD, keyD}}, // the object of the old and of the new CombinedStatus
		{name: "CombinedStatus deleted: its object put back", event: func(x *harness) { x.h.onCombinedStatus(combinedStatus("7"), nil) },
			objects: []string{keyD}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newHarness(t, seeded()...)
			if tc.prepare != nil {
				tc.prepare(x)
			}
			tc.event(x)
			for _, q := range []struct {
				name      string
				got, want []string
			}{{"objects", x.objects.items, tc.objects}, {"policies", x.policies.items, tc.policies}, {"kinds", x.kinds.items, tc.kinds}} {
				if !slices.Equal(sorted(q.got), sorted(q.want)) {
					t.Errorf("%s queued %q, want %q", q.name, q.got, q.want)
				}
			}
			dirty, _, _ := x.wecs.Take(rules.WorkStatusObject(ws))
			if !slices.Equal(sorted(dirty), tc.changedWECs) && len(dirty)+len(tc.changedWECs) > 0 {
				t.Errorf("changed WECs of %s: %q, want %q", rules.WorkStatusObject(ws), dirty, tc.changedWECs)
			}
		})
	}
}
