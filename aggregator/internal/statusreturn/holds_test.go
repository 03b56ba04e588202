package statusreturn

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/aggregator/internal/echo"
	"github.com/statusfold/statusfold/aggregator/internal/testutil"
)

// TestReturnLabelsHoldTheVersionTheyFollow: the return's labels, applied conditionally on the
// object's resourceVersion (7), hold 7 in the Bindings that list it from before the write (a
// reconcile between the write and its event keeps 7); a write the apiserver refuses (the object
// changed: a conflict) holds nothing, so the other writer's change is recorded as usual.
func TestReturnLabelsHoldTheVersionTheyFollow(t *testing.T) {
	labels := map[string]string{"kubestellar.io/executing-count": "1"}
	for _, tc := range []struct {
		name string
		fail func(testutil.SentWrite) error
		want string // the version a Binding listing 7 records for the object now at 12
	}{
		{name: "written: 7 held", want: "7"},
		{name: "refused: nothing held", want: "12", fail: func(w testutil.SentWrite) error {
			if w.Sub == "" {
				return apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "d", nil)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &testutil.FakeAPI{Fail: tc.fail}
			r, _ := newTestReturner(api)
			r.holds = echo.NewHolds(time.Minute)
			_, _ = r.writeReturn(context.Background(), deployment(t, nil, ""), labels, decode(t, `{"replicas":3}`), nil)
			if len(api.Writes) == 0 || api.Writes[0].Sub != "" {
				t.Fatalf("writes %+v: want the labels' apply first", api.Writes)
			}
			if got := r.holds.Version(deployKey, "12", "7"); got != tc.want {
				t.Errorf("Version: %q, want %q", got, tc.want)
			}
		})
	}
}
