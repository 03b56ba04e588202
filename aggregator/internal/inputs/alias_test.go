package inputs

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/statusfold/statusfold/aggregator/internal/resources"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// TestSameObjectBound pins the input of ReturnInput.ReturnedElsewhere: a candidate bound under
// another resource is the object only when it reads with the same UID; one that cannot be read
// (its group's server is down, discovery fails) makes the answer unknown — an error, so the
// return is not removed — and only NotFound means "not it".
func TestSameObjectBound(t *testing.T) {
	const uid = types.UID("u-1")
	front := rules.ObjectKey{Group: "front.example.com", Resource: "things", Namespace: "ns", Name: "t1"}
	other := rules.ObjectKey{Group: "other.example.com", Resource: "things", Namespace: "ns", Name: "t1"}
	down := errors.New(`the server is currently unable to handle the request (get things.front.example.com t1)`)
	type read struct {
		uid types.UID
		err error
	}
	cases := []struct {
		name       string
		candidates []rules.ObjectKey
		reads      map[rules.ObjectKey]read
		want       bool
		wantErr    bool
	}{
		{"no candidate", nil, nil, false, false},
		{"same UID under another resource", []rules.ObjectKey{front}, map[rules.ObjectKey]read{front: {uid: uid}}, true, false},
		{"another object of the same name", []rules.ObjectKey{front}, map[rules.ObjectKey]read{front: {uid: "u-2"}}, false, false},
		{"candidate gone", []rules.ObjectKey{front}, map[rules.ObjectKey]read{front: {err: apierrors.NewNotFound(schema.GroupResource{Group: front.Group, Resource: front.Resource}, "t1")}}, false, false},
		{"candidate's group down: unknown", []rules.ObjectKey{front}, map[rules.ObjectKey]read{front: {err: down}}, false, true},
		{"candidate's discovery failed: unknown", []rules.ObjectKey{front}, map[rules.ObjectKey]read{front: {err: resources.ErrUncertain}}, false, true},
		{"second candidate is it", []rules.ObjectKey{other, front}, map[rules.ObjectKey]read{other: {uid: "u-2"}, front: {uid: uid}}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sameObjectBound(uid, tc.candidates, func(k rules.ObjectKey) (types.UID, error) {
				r, ok := tc.reads[k]
				if !ok {
					t.Fatalf("read of %s, not a candidate", k)
				}
				return r.uid, r.err
			})
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("sameObjectBound = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
