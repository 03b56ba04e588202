package statusreturn

import (
	"context"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	"slices"
	"strconv"
	"testing"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/statusfold/statusfold/aggregator/internal/inputs"
	"github.com/statusfold/statusfold/aggregator/internal/metrics"
)

// failWhile answers err to the status writes that still carry the status field at path.
func failWhile(err error, path ...string) func(testutil.SentWrite) error {
	return func(w testutil.SentWrite) error {
		if _, found, _ := unstructured.NestedFieldNoCopy(w.Obj.Object, path...); found && w.Sub == "status" {
			return err
		}
		return nil
	}
}

// TestApplyReturnLeavesOutWhatIsRefused: a status field another manager owns, or one the kind's
// validation rejects, is dropped and the rest written, with an Event naming it; the next
// evaluation of the same status writes nothing. What cannot be narrowed down is not returned.
func TestApplyReturnLeavesOutWhatIsRefused(t *testing.T) {
	conflict := apierrors.NewApplyConflict([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict,
		Message: `conflict with "kube-controller-manager"`, Field: ".status.readyReplicas"}}, "Apply failed with 1 conflict")
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "d",
		field.ErrorList{field.Invalid(field.NewPath("status", "completionTime"), "2026", "unexpected")})
	invalidSpec := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "d",
		field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), -1, "must be positive")})
	owned := ownedBy("status", statusOwned)
	cases := []struct {
		name      string
		fail      func(testutil.SentWrite) error
		status    string
		want      []string
		events    []string
		conflicts float64
		err       bool
		echo      bool           // the last write's echo is recognised as statusfold's own
		next      *inputs.Object // the object at the next evaluation of the same status
		wantNext  []string       // what that evaluation writes
	}{
		{name: "field owned by another manager: left to it", fail: failWhile(conflict, "status", "readyReplicas"),
			status: `{"replicas":3,"readyReplicas":2}`,
			want: []string{`status {` + sentHead + sentMeta + `,"status":{"readyReplicas":2,"replicas":3}}`,
				`status {` + sentHead + sentMeta + `,"status":{"replicas":3}}`},
			events:    []string{"Normal FieldsOwnedByOthers not written because another field manager owns them: .status.readyReplicas"},
			conflicts: 1, echo: true,
			next: deployment(t, nil, `{"replicas":3,"readyReplicas":1}`, owned)},
		{name: "field the kind rejects: dropped", fail: failWhile(invalid, "status", "completionTime"),
			status: `{"replicas":3,"completionTime":"2026"}`,
			want: []string{`status {` + sentHead + sentMeta + `,"status":{"completionTime":"2026","replicas":3}}`,
				`status {` + sentHead + sentMeta + `,"status":{"replicas":3}}`},
			events: []string{"Warning StatusFieldsRejected written without the fields the apiserver rejected: apply status ns/d: " + invalid.Error()},
			echo:   true, next: deployment(t, nil, `{"replicas":3}`, owned)},
		{name: "rejection naming no status field: not returned", fail: failWhile(invalidSpec, "status"),
			status: `{"replicas":3}`,
			want:   []string{`status {` + sentHead + sentMeta + `,"status":{"replicas":3}}`},
			events: []string{"Warning StatusNotReturned apply status ns/d: " + invalidSpec.Error()},
			next:   deployment(t, nil, `{"replicas":1}`)},
		{name: "apiserver unavailable: the error is returned and retried", fail: failWhile(apierrors.NewServiceUnavailable("down"), "status"),
			status: `{"replicas":3}`, err: true,
			want:     []string{`status {` + sentHead + sentMeta + `,"status":{"replicas":3}}`},
			next:     deployment(t, nil, ""),
			wantNext: []string{`status {` + sentHead + sentMeta + `,"status":{"replicas":3}}`}},
	}
	conflicts := metrics.New().Conflicts
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := &testutil.FakeAPI{Fail: tc.fail}
			r, rec := newTestReturner(api)
			before := promtest.ToFloat64(conflicts)
			_, err := r.writeReturn(context.Background(), deployment(t, nil, ""), nil, decode(t, tc.status), nil)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			if got := sent(t, api, 0); !slices.Equal(got, tc.want) {
				t.Errorf("writes\n got %q\nwant %q", got, tc.want)
			}
			if got := testutil.Recorded(rec); !slices.Equal(got, tc.events) {
				t.Errorf("events\n got %q\nwant %q", got, tc.events)
			}
			if got := promtest.ToFloat64(conflicts) - before; got != tc.conflicts {
				t.Errorf("statusfold_status_conflicts_total grew by %v, want %v", got, tc.conflicts)
			}
			lastRV := strconv.Itoa(100 + len(api.Writes))
			if echo := r.ownWrites.Seen(deployKey.String(), lastRV, func() {}); echo != tc.echo {
				t.Errorf("resourceVersion %s recognised as the echo of statusfold's write: %v, want %v", lastRV, echo, tc.echo)
			}
			api.Fail = nil
			from := len(api.Writes)
			if _, err := r.writeReturn(context.Background(), tc.next, nil, decode(t, tc.status), nil); err != nil {
				t.Fatal(err)
			}
			if got := sent(t, api, from); !slices.Equal(got, tc.wantNext) {
				t.Errorf("next evaluation's writes\n got %q\nwant %q", got, tc.wantNext)
			}
		})
	}
}
