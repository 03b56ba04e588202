package luaconfig

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/statusfold/statusfold/aggregator/internal/metrics"
	"github.com/statusfold/statusfold/aggregator/internal/report"
	"github.com/statusfold/statusfold/policy/luahealth"
)

type fakeEngine struct{ installed []*luahealth.Checks }

func (f *fakeEngine) SetLuaChecks(c *luahealth.Checks) { f.installed = append(f.installed, c) }

var (
	key         = types.NamespacedName{Namespace: "argocd", Name: "argocd-cm"}
	certificate = schema.GroupKind{Group: "cert-manager.io", Kind: "Certificate"}
	widget      = schema.GroupKind{Group: "example.com", Kind: "Widget"}
)

func configMap(rv string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: rv}, Data: data}
}

// TestReconcile: the ConfigMap's checks go in front of Argo CD's; a broken entry is reported (log,
// Event, metric) and its kind keeps Argo CD's check, while the other entries apply; the same
// version is not installed twice; a deleted ConfigMap leaves Argo CD's checks alone. Every install
// re-evaluates.
func TestReconcile(t *testing.T) {
	builtin, err := luahealth.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cm := configMap("", map[string]string{
		"resource.customizations.health.example.com_Widget":          `return {status = "Healthy"}`,
		"resource.customizations.health.cert-manager.io_Certificate": `return {status = `,
	})
	c := fake.NewClientBuilder().WithObjects(cm).Build()
	engine := &fakeEngine{}
	rec := events.NewFakeRecorder(8)
	m := metrics.New()
	before := testutil.ToFloat64(m.Errors.WithLabelValues("lua-health"))
	reevaluated := 0
	r := New(Config{Cache: c, Key: key, Builtin: builtin, Engine: engine, Metrics: m, Recorder: rec, Log: logr.Discard(),
		Reevaluate: func(context.Context) { reevaluated++ }})
	ctx := context.Background()
	for range 2 {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
	}
	if len(engine.installed) != 1 || reevaluated != 1 {
		t.Fatalf("installed %d times, re-evaluated %d times; want once each", len(engine.installed), reevaluated)
	}
	got := engine.installed[0]
	if s := got.For(widget); s == nil || s.Source != luahealth.SourceConfigMap {
		t.Errorf("the good entry is not installed: %+v", s)
	}
	if s := got.For(certificate); s == nil || s.Source != luahealth.SourceArgoCD {
		t.Errorf("the broken entry's kind must keep Argo CD's check: %+v", s)
	}
	if n := testutil.ToFloat64(m.Errors.WithLabelValues("lua-health")) - before; n != 1 {
		t.Errorf("statusfold_errors_total{where=lua-health} +%v, want +1", n)
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, "InvalidLuaHealthCheck") || !strings.Contains(e, "cert-manager.io_Certificate") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no Event for the broken entry")
	}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if len(engine.installed) != 2 || engine.installed[1].For(widget) != nil || reevaluated != 2 {
		t.Errorf("after deletion: installed %d, re-evaluated %d; want Argo CD's checks alone", len(engine.installed), reevaluated)
	}
}

// TestScriptErrors: every failure counts; the log is rate-limited per check and kind.
func TestScriptErrors(t *testing.T) {
	m := metrics.New()
	before := testutil.ToFloat64(m.Errors.WithLabelValues("lua-health"))
	var lines int
	log := funcr.New(func(_, _ string) { lines++ }, funcr.Options{})
	f := ScriptErrors(m, log, report.NewThrottle(report.FailureWindow))
	for range 3 {
		f(widget, "lua/configmap/example.com/Widget", errors.New("boom"))
	}
	if n := testutil.ToFloat64(m.Errors.WithLabelValues("lua-health")) - before; n != 3 {
		t.Errorf("statusfold_errors_total{where=lua-health} +%v, want +3", n)
	}
	if lines != 1 {
		t.Errorf("%d log lines, want 1 (rate-limited)", lines)
	}
}
