package writer

import (
	"context"
	"errors"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	"strings"
	"testing"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
)

// servedSchema declares spec.a and status.phase only: what KubeStellar's own CRDs look like to a
// write that carries more.
const servedSchema = `{"type":"object","properties":{
	"spec":{"type":"object","properties":{"a":{"type":"string"}}},
	"status":{"type":"object","properties":{"phase":{"type":"string"}}}}}`

// refreshingSchemas resolves every kind to one schema and counts the calls to Refresh.
type refreshingSchemas struct {
	s         *spec.Schema
	refreshes int
}

func (r *refreshingSchemas) ResolveSchema(schema.GroupVersionKind) (*spec.Schema, error) {
	return r.s, nil
}
func (r *refreshingSchemas) Refresh() { r.refreshes++ }

func objectOf(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	return &unstructured.Unstructured{Object: jsonMap(t, js)}
}

// TestApplySendsPrunedToServedSchema: an object of control.kubestellar.io is sent pruned to the
// schema served for its kind, as a patch of type apply with fieldValidation=Ignore, and the
// dropped fields are reported in an Event; an object of another group is sent whole by Apply.
func TestApplySendsPrunedToServedSchema(t *testing.T) {
	const cs = `"apiVersion":"control.kubestellar.io/v1alpha1","kind":"CombinedStatus","metadata":{"name":"cs","namespace":"ns"}`
	const deploy = `"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"ns"}`
	cases := []struct {
		name   string
		in     string
		sub    string
		force  bool
		want   testutil.SentWrite
		sent   string
		events []string
	}{
		{name: "undeclared spec field dropped", in: `{` + cs + `,"spec":{"a":"x","b":"y"}}`, force: true,
			want:   testutil.SentWrite{Verb: "patch", PatchType: types.ApplyPatchType, Manager: "statusfold", Validation: "Ignore", Force: true},
			sent:   `{` + cs + `,"spec":{"a":"x"}}`,
			events: []string{"Warning FieldsDropped written without fields that the served schema of CombinedStatus.control.kubestellar.io does not declare (reported once per kind and schema): .spec.b"}},
		{name: "declared fields only: sent whole, nothing reported", in: `{` + cs + `,"spec":{"a":"x"}}`,
			want: testutil.SentWrite{Verb: "patch", PatchType: types.ApplyPatchType, Manager: "statusfold", Validation: "Ignore"},
			sent: `{` + cs + `,"spec":{"a":"x"}}`},
		{name: "status subresource pruned", in: `{` + cs + `,"status":{"phase":"Ready","conditions":[]}}`, sub: "status", force: true,
			want:   testutil.SentWrite{Verb: "patch", Sub: "status", PatchType: types.ApplyPatchType, Manager: "statusfold", Validation: "Ignore", Force: true},
			sent:   `{` + cs + `,"status":{"phase":"Ready"}}`,
			events: []string{"Warning FieldsDropped written without fields that the served schema of CombinedStatus.control.kubestellar.io does not declare (reported once per kind and schema): .status.conditions"}},
		{name: "another group: applied whole, not forced", in: `{` + deploy + `,"spec":{"a":"x","b":"y"}}`,
			want: testutil.SentWrite{Verb: "apply", PatchType: types.ApplyPatchType, Manager: "statusfold"},
			sent: `{` + deploy + `,"spec":{"a":"x","b":"y"}}`},
		{name: "another group's status: applied whole on the subresource", in: `{` + deploy + `,"status":{"extra":1}}`, sub: "status",
			want: testutil.SentWrite{Verb: "apply", Sub: "status", PatchType: types.ApplyPatchType, Manager: "statusfold"},
			sent: `{` + deploy + `,"status":{"extra":1}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := &testutil.FakeAPI{}
			w, rec := newTestWriter(api, oneSchema{schemaOf(t, servedSchema)})
			u := objectOf(t, tc.in)
			if err := w.Apply(context.Background(), u, tc.sub, tc.force, "combinedstatus"); err != nil {
				t.Fatal(err)
			}
			if len(api.Writes) != 1 {
				t.Fatalf("writes: got %d, want 1", len(api.Writes))
			}
			got := api.Writes[0]
			tc.want.Obj = objectOf(t, tc.sent)
			if got.Verb != tc.want.Verb || got.Sub != tc.want.Sub || got.PatchType != tc.want.PatchType || got.Manager != tc.want.Manager ||
				got.Validation != tc.want.Validation || got.Force != tc.want.Force {
				t.Errorf("write: got %+v\nwant %+v", got, tc.want)
			}
			if !equality.Semantic.DeepEqual(got.Obj.Object, tc.want.Obj.Object) {
				t.Errorf("sent:\n got %v\nwant %v", got.Obj.Object, tc.want.Obj.Object)
			}
			if rv := u.GetResourceVersion(); rv != "101" {
				t.Errorf("the apiserver's answer is not in the object: resourceVersion %q, want 101", rv)
			}
			if ev := testutil.Recorded(rec); !equality.Semantic.DeepEqual(ev, tc.events) {
				t.Errorf("events:\n got %q\nwant %q", ev, tc.events)
			}
		})
	}
}

// TestServedDropsReportedOncePerKindAndSchema: the fields a served schema lacks are counted at
// every write, and reported by an Event once per kind, schema and set of fields.
func TestServedDropsReportedOncePerKindAndSchema(t *testing.T) {
	api := &testutil.FakeAPI{}
	w, rec := newTestWriter(api, oneSchema{schemaOf(t, servedSchema)})
	dropped := metrics.New().Dropped.WithLabelValues("served-schema")
	before := promtest.ToFloat64(dropped)
	write := func(js string) {
		t.Helper()
		in := `{"apiVersion":"control.kubestellar.io/v1alpha1","kind":"Binding","metadata":{"name":"b"},` + js + `}`
		if err := w.Apply(context.Background(), objectOf(t, in), "", true, "binding"); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name       string
		obj        string
		events     int
		droppedNow float64
	}{
		{name: "first write without .spec.b", obj: `"spec":{"a":"x","b":"y"}`, events: 1, droppedNow: 1},
		{name: "same fields again", obj: `"spec":{"a":"z","b":"w"}`, events: 0, droppedNow: 2},
		{name: "another set of fields", obj: `"spec":{"b":"y","c":"z"}`, events: 1, droppedNow: 4},
		{name: "nothing to drop", obj: `"spec":{"a":"x"}`, events: 0, droppedNow: 4},
	}
	for _, s := range steps {
		write(s.obj)
		if ev := testutil.Recorded(rec); len(ev) != s.events {
			t.Errorf("%s: events %q, want %d", s.name, ev, s.events)
		}
		if got := promtest.ToFloat64(dropped) - before; got != s.droppedNow {
			t.Errorf("%s: statusfold_status_fields_dropped_total{served-schema} grew by %v, want %v", s.name, got, s.droppedNow)
		}
	}
}

// TestSchemaRejectionRefreshesResolver: a pruned write that the apiserver rejects for a field its
// schema does not declare makes the resolver look for new schemas; other failures do not, and the
// error is returned naming the write.
func TestSchemaRejectionRefreshesResolver(t *testing.T) {
	rejected := apierrors.NewBadRequest(`.spec.b: field not declared in schema`)
	cases := []struct {
		name      string
		apiVer    string
		err       error
		refreshes int
	}{
		{name: "pruned write rejected for an undeclared field", apiVer: "control.kubestellar.io/v1alpha1", err: rejected, refreshes: 1},
		{name: "pruned write failing otherwise", apiVer: "control.kubestellar.io/v1alpha1", err: apierrors.NewServiceUnavailable("down")},
		{name: "unpruned write rejected for an undeclared field", apiVer: "apps/v1", err: rejected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := &testutil.FakeAPI{Fail: func(testutil.SentWrite) error { return tc.err }}
			schemas := &refreshingSchemas{s: schemaOf(t, servedSchema)}
			w, _ := newTestWriter(api, schemas)
			u := objectOf(t, `{"apiVersion":"`+tc.apiVer+`","kind":"Thing","metadata":{"name":"n","namespace":"ns"},"spec":{"a":"x"}}`)
			err := w.Apply(context.Background(), u, "", false, "thing")
			if !errors.Is(err, tc.err) || !strings.HasPrefix(err.Error(), "apply thing ns/n: ") {
				t.Errorf("error: got %v, want %v wrapped as the apply of thing ns/n", err, tc.err)
			}
			if schemas.refreshes != tc.refreshes {
				t.Errorf("refreshes: got %d, want %d", schemas.refreshes, tc.refreshes)
			}
		})
	}
}
