package statusreturn

import (
	"context"
	"encoding/json"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

const (
	labelsOwned = `{"f:metadata":{"f:labels":{"f:kubestellar.io/executing-count":{},"f:managed-by.kubestellar.io/singletonstatus":{}}}}`
	statusOwned = `{"f:status":{"f:replicas":{}}}`
	// sentHead and sentMeta begin every apply of the object's status (in JSON's key order).
	sentHead = `"apiVersion":"apps/v1","kind":"Deployment",`
	sentMeta = `"metadata":{"name":"d","namespace":"ns"}`
)

var (
	deployKey  = rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "d"}
	deployInfo = resources.ResourceInfo{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Kind: "Deployment", Namespaced: true, HasStatus: true}
	singleton = map[string]string{rules.LabelExecutingCount: "1", rules.LabelSingletonStatus: "true"}
)

// decode reads JSON as the apiserver's objects are read (integers as int64); "" is nil.
func decode(t *testing.T, js string) map[string]any {
	t.Helper()
	if js == "" {
		return nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// ownedBy is a server-side apply entry of statusfold for the subresource sub ("": main).
func ownedBy(sub, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: rules.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Subresource: sub,
		APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// deployment is the Deployment ns/d at resourceVersion 7 as the apiserver holds it.
func deployment(t *testing.T, labels map[string]string, status string, owned ...metav1.ManagedFieldsEntry) *inputs.Object {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}
	u.SetNamespace("ns")
	u.SetName("d")
	u.SetUID("uid-d")
	u.SetResourceVersion("7")
	u.SetLabels(labels)
	u.SetManagedFields(owned)
	if s := decode(t, status); s != nil {
		u.Object["status"] = s
	}
	return &inputs.Object{Key: deployKey, Info: deployInfo, Obj: u}
}

// labelsApply is the apply of the labels (JSON, "" for none) on the main resource, made
// conditional on the object's resourceVersion, then of rest (",..." or "").
func labelsApply(labels, rest string) string {
	if labels != "" {
		labels = `"labels":` + labels + `,`
	}
	return `main {` + sentHead + `"metadata":{` + labels + `"name":"d","namespace":"ns","resourceVersion":"7"}` + rest + `}`
}

const (
	bothLabels = `{"kubestellar.io/executing-count":"1","managed-by.kubestellar.io/singletonstatus":"true"}`
	countLabel = `{"kubestellar.io/executing-count":"1"}`
)

// sent is the writes the fake apiserver received from index from on, each as its subresource
// ("main" for the main resource) and its JSON; every one must be a non-forced apply of statusfold.
func sent(t *testing.T, api *testutil.FakeAPI, from int) []string {
	t.Helper()
	var out []string
	for _, w := range api.Writes[from:] {
		if w.Verb != "apply" || w.Force || w.Manager != rules.FieldManager {
			t.Errorf("write %+v: want a non-forced apply by %s", w, rules.FieldManager)
		}
		b, err := json.Marshal(w.Obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		sub := w.Sub
		if sub == "" {
			sub = "main"
		}
		out = append(out, sub+" "+string(b))
	}
	return out
}

// TestWriteReturnWritesWhatIsNotCurrent drives one returner through evaluations of one object:
// the labels go to the main resource, the status to the status subresource, and each is written
// only when what statusfold owns differs from what is wanted.
func TestWriteReturnWritesWhatIsNotCurrent(t *testing.T) {
	api := &testutil.FakeAPI{}
	r, _ := newTestReturner(api)
	steps := []struct {
		name   string
		in     *inputs.Object
		labels map[string]string
		status string
		want   []string
	}{
		{name: "nothing of statusfold's yet", in: deployment(t, nil, ""), labels: singleton, status: `{"replicas":3}`,
			want: []string{
				labelsApply(bothLabels, ""),
				`status {` + sentHead + sentMeta + `,"status":{"replicas":3}}`}},
		{name: "labels and status current, owned by statusfold",
			in:     deployment(t, singleton, `{"replicas":3,"observedGeneration":2}`, ownedBy("", labelsOwned), ownedBy("status", statusOwned)),
			labels: singleton, status: `{"replicas":3}`},
		{name: "another status wanted",
			in:     deployment(t, singleton, `{"replicas":3}`, ownedBy("", labelsOwned), ownedBy("status", statusOwned)),
			labels: singleton, status: `{"replicas":4}`,
			want: []string{`status {` + sentHead + sentMeta + `,"status":{"replicas":4}}`}},
		{name: "a return label statusfold owns is no longer wanted",
			in:     deployment(t, singleton, `{"replicas":4}`, ownedBy("", labelsOwned), ownedBy("status", statusOwned)),
			labels: map[string]string{rules.LabelExecutingCount: "1"}, status: `{"replicas":4}`,
			want: []string{labelsApply(countLabel, "")}},
		{name: "a label another manager changed is put back",
			in:     deployment(t, map[string]string{rules.LabelExecutingCount: "5"}, `{"replicas":4}`, ownedBy("", `{"f:metadata":{"f:labels":{"f:kubestellar.io/executing-count":{}}}}`), ownedBy("status", statusOwned)),
			labels: map[string]string{rules.LabelExecutingCount: "1"}, status: `{"replicas":4}`,
			want: []string{labelsApply(countLabel, "")}},
	}
	for _, s := range steps {
		from := len(api.Writes)
		wrote, err := r.writeReturn(context.Background(), s.in, s.labels, decode(t, s.status), nil)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := sent(t, api, from); !slices.Equal(got, s.want) {
			t.Errorf("%s: writes\n got %q\nwant %q", s.name, got, s.want)
		}
		if wrote != (len(s.want) > 0) {
			t.Errorf("%s: wrote %v, want %v", s.name, wrote, len(s.want) > 0)
		}
	}
}

// TestWriteReturnCases: each case is a first evaluation by a fresh returner.
func TestWriteReturnCases(t *testing.T) {
	noSub := func(in *inputs.Object) *inputs.Object { in.Info.HasStatus = false; return in }
	cases := []struct {
		name   string
		in     *inputs.Object
		labels map[string]string
		status string
		want   []string
	}{
		{name: "kind without a status subresource: labels and status in one write",
			in: noSub(deployment(t, nil, "")), labels: singleton, status: `{"replicas":3}`,
			want: []string{labelsApply(bothLabels, `,"status":{"replicas":3}`)}},
		{name: "status owned but not remembered (a restarted manager): applied once more, labels left",
			in:     deployment(t, singleton, `{"replicas":3}`, ownedBy("", labelsOwned), ownedBy("status", statusOwned)),
			labels: singleton, status: `{"replicas":3}`,
			want: []string{`status {` + sentHead + sentMeta + `,"status":{"replicas":3}}`}},
		{name: "return removed: labels and status applied empty",
			in:   deployment(t, singleton, `{"replicas":3}`, ownedBy("", labelsOwned), ownedBy("status", statusOwned)),
			want: []string{labelsApply("", ""), `status {` + sentHead + sentMeta + `}`}},
		{name: "nothing of statusfold's and nothing wanted", in: deployment(t, map[string]string{"app": "x"}, `{"replicas":3}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := &testutil.FakeAPI{}
			r, _ := newTestReturner(api)
			if _, err := r.writeReturn(context.Background(), tc.in, tc.labels, decode(t, tc.status), nil); err != nil {
				t.Fatal(err)
			}
			if got := sent(t, api, 0); !slices.Equal(got, tc.want) {
				t.Errorf("writes\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
