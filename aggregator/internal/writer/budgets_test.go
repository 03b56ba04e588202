package writer

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/policy/sizebudget"
)

func TestIsTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"413", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), true},
		{"etcd", fmt.Errorf("apply: %w", errors.New("etcdserver: request is too large")), true},
		{"apiserver text", errors.New("the server responded with: Request entity too large: limit is 3145728"), true},
		{"grpc", errors.New("rpc error: code = ResourceExhausted desc = trying to send message larger than max (2097152 vs. 2000000)"), true},
		{"conflict", apierrors.NewConflict(schema.GroupResource{Resource: "deployments"}, "x", errors.New("changed")), false},
		{"internal", apierrors.NewInternalError(errors.New("boom")), false},
		{"nil", nil, false},
	} {
		if got := IsTooLarge(tc.err); got != tc.want {
			t.Errorf("%s: IsTooLarge = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestBudgetsShrinkAndSettle(t *testing.T) {
	b := NewBudgets(0)
	if got := b.For("k"); got != sizebudget.DefaultBytes {
		t.Fatalf("default budget %d", got)
	}
	n, lower := b.Shrink("k", 800_000)
	if !lower || n != 600_000 || b.For("k") != 600_000 || b.For("other") != sizebudget.DefaultBytes {
		t.Fatalf("after a refusal of 800000 bytes: %d %v", n, lower)
	}
	for range 100 {
		b.Shrink("k", 1)
	}
	if got := b.For("k"); got != sizebudget.MinBytes {
		t.Fatalf("budget below its floor: %d", got)
	}
	if _, lower := b.Shrink("k", 1); lower {
		t.Fatal("shrank below the floor")
	}
	b.Settle("k", sizebudget.MinBytes, false) // not within half: kept
	if b.For("k") != sizebudget.MinBytes {
		t.Fatal("forgot a learned budget the content still needs")
	}
	b.Settle("k", sizebudget.MinBytes/2, false)
	if b.For("k") != sizebudget.DefaultBytes {
		t.Fatal("kept a learned budget after the content shrank")
	}
}
