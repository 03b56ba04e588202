package controller

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/test/framework"
)

// logBuffer collects a manager's log lines at default verbosity (V(0)) only.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		fmt.Fprintf(&l.buf, "%s %s\n", prefix, args)
	}, funcr.Options{Verbosity: 0})
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startLoggedManager runs the reconciler in-process as startManager does, but with cfg (e.g. an
// impersonating one) and with its log at default verbosity collected in the returned buffer
// (printed when the test fails, after the manager stopped).
func startLoggedManager(t *testing.T, cp *framework.ControlPlane, cfg *rest.Config, opts aggregator.Options) *logBuffer {
	t.Helper()
	logs := &logBuffer{}
	t.Cleanup(func() { // registered first: runs after startManagerWith's stop
		if t.Failed() {
			t.Logf("manager log:\n%s", tail(logs.String(), 4000))
		}
	})
	startManagerWith(t, cp, cfg, opts, logs.logger())
	return logs
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// events lists the Events about the named object with the given reason.
func events(c client.Client, ns, name, reason string) ([]eventsv1.Event, error) {
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	var list eventsv1.EventList
	if err := c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out, nil
}

// expectEvent waits for a Warning Event with the reason about the named object (ns "" for a
// cluster-scoped one) whose note contains text.
func expectEvent(t *testing.T, c client.Client, ns, name, reason, text string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s Event on %s", reason, name), func() error {
		evs, err := events(c, ns, name, reason)
		if err != nil {
			return err
		}
		if len(evs) == 0 || !strings.Contains(evs[0].Note, text) || evs[0].Type != "Warning" {
			return fmt.Errorf("events %+v", evs)
		}
		return nil
	})
}
