package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/statusfold/statusfold/aggregator/internal/pacing"
	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// TestControllerRecoversPanics runs a reconcile function that panics, and one that fails, through
// a controller built as the reconciler's are: the panic is reported as a panic with its stack
// (statusfold's where="panic") and reaches the controller as an error (RecoverPanic), so the key
// is requeued instead of the process ending; a plain error is reported and returned as it is.
func TestControllerRecoversPanics(t *testing.T) {
	type report struct {
		key      string
		err      error
		requeues int
	}
	plain := errors.New("plain")
	cases := []struct {
		name       string
		do         func(context.Context, string) error
		wantErr    string // prefix of the controller's error; "" for none
		wantReport string // prefix of the reported error; "" for no report
		wantStack  bool
	}{
		{name: "panic", do: func(_ context.Context, k string) error { panic("boom for " + k) },
			wantErr: "panic: boom for key", wantReport: "panic: boom for key", wantStack: true},
		{name: "error", do: func(context.Context, string) error { return plain }, wantErr: "plain", wantReport: "plain"},
		{name: "success", do: func(context.Context, string) error { return nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []report
			q := pacing.NewCoalescingQueue[string]("test_"+tc.name, 0)
			defer q.ShutDown()
			c, err := New("test_"+tc.name, logr.Discard(), q, q.Limiter, 1, tc.do, func(k string, err error, n int) {
				got = append(got, report{k, err, n})
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Reconcile(t.Context(), "key")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Reconcile = %v, want no error", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Errorf("Reconcile = %v, want an error starting %q", err, tc.wantErr)
			}
			if tc.wantReport == "" {
				if len(got) != 0 {
					t.Errorf("reported %v, want nothing", got)
				}
				return
			}
			if len(got) != 1 || got[0].key != "key" || got[0].requeues != 0 || !strings.HasPrefix(got[0].err.Error(), tc.wantReport) {
				t.Fatalf("reported %v, want one report of key with an error starting %q", got, tc.wantReport)
			}
			if hasStack := strings.Contains(got[0].err.Error(), "goroutine"); hasStack != tc.wantStack {
				t.Errorf("reported error has a stack: %v, want %v", hasStack, tc.wantStack)
			}
		})
	}
}

// TestAwaitFirstPass: AfterFirstPass is called once the start's sweep for labelled objects has
// queued them and then the objects queue is empty, not before the sweep ends or while an object
// waits; never when the context ends first.
func TestAwaitFirstPass(t *testing.T) {
	called := make(chan struct{}, 2)
	objects := pacing.NewCoalescingQueue[rules.ObjectKey]("first-pass-test", 0)
	defer objects.ShutDown()
	after := func() { called <- struct{}{} }
	swept := make(chan struct{})
	go AwaitFirstPass(context.Background(), time.Now(), swept, objects, logr.Discard(), after)
	select {
	case <-called:
		t.Fatal("AfterFirstPass called before the sweep for labelled objects ended (the queue was empty)")
	case <-time.After(3 * FirstPassPoll):
	}
	key := rules.ObjectKey{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}
	objects.Add(key) // queued by the sweep
	close(swept)
	select {
	case <-called:
		t.Fatal("AfterFirstPass called while an object was queued")
	case <-time.After(3 * FirstPassPoll):
	}
	k, _ := objects.Get()
	objects.Done(k)
	select {
	case <-called:
	case <-time.After(20 * FirstPassPoll):
		t.Fatal("AfterFirstPass not called after the queue emptied")
	}

	ctx, cancel := context.WithCancel(context.Background())
	objects.Add(key)
	done := make(chan struct{})
	go func() { AwaitFirstPass(ctx, time.Now(), nil, objects, logr.Discard(), after); close(done) }()
	cancel()
	<-done
	if len(called) != 0 {
		t.Fatal("AfterFirstPass called after the context ended")
	}
}
