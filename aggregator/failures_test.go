package aggregator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestThrottle(t *testing.T) {
	th := newThrottle(time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		key            string
		at             time.Duration
		want           bool
		wantSuppressed int
	}{
		{"a", 0, true, 0},
		{"a", time.Second, false, 0},
		{"b", time.Second, true, 0}, // another key is not held back
		{"a", 30 * time.Second, false, 0},
		{"a", 61 * time.Second, true, 2}, // reported again, with the count of those held back
		{"a", 62 * time.Second, false, 0},
		{"a", 200 * time.Second, true, 1},
	}
	for i, s := range steps {
		got, n := th.allow(s.key, t0.Add(s.at))
		if got != s.want || n != s.wantSuppressed {
			t.Errorf("step %d (%s at %s): allow = %v, %d; want %v, %d", i, s.key, s.at, got, n, s.want, s.wantSuppressed)
		}
	}
}

func TestCallRecoversPanics(t *testing.T) {
	err := call(t.Context(), "key", func(_ context.Context, k string) error { panic("boom for " + k) })
	if err == nil || !strings.HasPrefix(err.Error(), "panic: boom for key") || !strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("call = %v, want the panic as an error with its stack", err)
	}
	want := errors.New("plain")
	if err := call(t.Context(), "key", func(context.Context, string) error { return want }); err != want {
		t.Errorf("call = %v, want %v", err, want)
	}
}

func TestOwnWritesForgetResource(t *testing.T) {
	var w ownWrites
	w.record(ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "a"}.String(), "1")
	w.record(ObjectKey{Group: "apps", Resource: "deployments", Name: "b"}.String(), "2")
	w.record(ObjectKey{Group: "apps", Resource: "deploymentsx", Namespace: "ns", Name: "a"}.String(), "3")
	w.record(ObjectKey{Resource: "configmaps", Namespace: "ns", Name: "a"}.String(), "4")
	w.record(combinedStatusWriteKey("ns", "a"), "5")
	w.forgetResource(schema.GroupResource{Group: "apps", Resource: "deployments"})
	if n := w.len(); n != 3 {
		t.Errorf("%d writes remembered after forgetting apps/deployments, want 3", n)
	}
	if !w.echo(ObjectKey{Group: "apps", Resource: "deploymentsx", Namespace: "ns", Name: "a"}.String(), "3") {
		t.Errorf("another resource's write was forgotten")
	}
	w.forgetResource(schema.GroupResource{Resource: "configmaps"})
	if n := w.len(); n != 2 {
		t.Errorf("%d writes remembered after forgetting configmaps, want 2", n)
	}
}
