package controller

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks/check"
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

func customObject(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	ensureNamespace(t, c, ns)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{"size": int64(1)}
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func customRef(gvk schema.GroupVersionKind, resource string, u *unstructured.Unstructured) controlv1alpha1.SourceRef {
	return controlv1alpha1.SourceRef{Group: gvk.Group, Version: gvk.Version, Resource: resource, Kind: gvk.Kind,
		Namespace: u.GetNamespace(), Name: u.GetName()}
}

var (
	widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	gaugeGVK  = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gauge"}
)

func testCRDs() string {
	return filepath.Join(framework.RepoRoot(), "test", "integration", "controller", "testdata")
}

// expectStatus waits until the object's .status, read from the apiserver, satisfies check.
func expectStatus(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string, check func(status map[string]any) error) {
	t.Helper()
	eventually(t, fmt.Sprintf("status of %s %s/%s", gvk.Kind, ns, name), func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return err
		}
		status, _, _ := unstructured.NestedMap(u.Object, "status")
		return check(status)
	})
}

// TestSchemaSkew: a WEC reports status fields that the WDS's schema of the kind lacks (as a WEC
// running a newer Kubernetes does). The returned status is written without them, an Event on
// the workload object and a metric say what was dropped; a kind whose status preserves unknown
// fields gets everything.
func TestSchemaSkew(t *testing.T) {
	cp := framework.RunControlPlane(t, framework.WithExtraCRDs(testCRDs()))
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	startManager(t, cp, aggregator.Options{})
	const ns = "skew"

	t.Run("Deployment", func(t *testing.T) {
		before := counter(t, "statusfold_status_fields_dropped_total", "reason", "schema")
		d := deployment(t, c, ns, "web", 3, nil)
		create(t, c, policy("skew-deployment", []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton)))
		st := deploymentStatus(3, 2, 1)
		st["extra"] = map[string]any{"a": int64(1)}
		report(t, c, "wec1", deploymentRef(d), st, applied(1))
		got := expectReturn(t, c, d, "1", 2)
		if got.observedGen != 1 {
			t.Errorf("observedGeneration = %d, want 1", got.observedGen)
		}
		u, err := getObject(c, d, ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "extra"); found {
			t.Errorf("status.extra written: %v", u.Object["status"])
		}
		expectEvent(t, c, ns, "web", "StatusFieldsDropped", ".status.extra")
		if after := counter(t, "statusfold_status_fields_dropped_total", "reason", "schema"); after < before+1 {
			t.Errorf("statusfold_status_fields_dropped_total{reason=schema} went from %v to %v, want at least +1", before, after)
		}
	})

	t.Run("PreserveUnknownFieldsCRD", func(t *testing.T) {
		w := customObject(t, c, widgetGVK, ns, "w1")
		create(t, c, policy("skew-widget", []string{"wec1"}, clause("example.com", "widgets", ns, []string{"w1"}, singleton)))
		report(t, c, "wec1", customRef(widgetGVK, "widgets", w),
			map[string]any{"phase": "Ready", "extra": map[string]any{"a": int64(1)}}, applied(1))
		expectStatus(t, c, widgetGVK, ns, "w1", func(status map[string]any) error {
			if status["phase"] != "Ready" || fmt.Sprint(status["extra"]) != "map[a:1]" {
				return fmt.Errorf("status %v, want phase Ready and extra {a: 1}", status)
			}
			return nil
		})
		if evs, err := events(c, ns, "w1", "StatusFieldsDropped"); err != nil || len(evs) > 0 {
			t.Errorf("StatusFieldsDropped events for a kind that preserves unknown fields: %+v (%v)", evs, err)
		}
	})

	t.Run("DeclaredStatusCRD", func(t *testing.T) {
		g := customObject(t, c, gaugeGVK, ns, "g1")
		create(t, c, policy("skew-gauge", []string{"wec1"}, clause("example.com", "gauges", ns, []string{"g1"}, singleton)))
		report(t, c, "wec1", customRef(gaugeGVK, "gauges", g),
			map[string]any{"phase": "Ready", "level": int64(4), "extra": map[string]any{"a": int64(1)}}, applied(1))
		expectStatus(t, c, gaugeGVK, ns, "g1", func(status map[string]any) error {
			if status["phase"] != "Ready" || fmt.Sprint(status["level"]) != "4" {
				return fmt.Errorf("status %v, want phase Ready and level 4", status)
			}
			if _, ok := status["extra"]; ok {
				return fmt.Errorf("status %v has extra", status)
			}
			return nil
		})
		expectEvent(t, c, ns, "g1", "StatusFieldsDropped", ".status.extra")
	})
}

// panickingSchemas is the WDS's schema resolver with a panic injected for one kind: every
// evaluation that returns status into an object of that kind panics.
type panickingSchemas struct {
	resolver.SchemaResolver
	kind string
}

func (p panickingSchemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	if gvk.Kind == p.kind {
		panic("injected panic for " + gvk.Kind)
	}
	return p.SchemaResolver.ResolveSchema(gvk)
}

// TestPanicInOneEvaluation: an evaluation that panics does not end the manager: it is retried
// with backoff and reported (log at default verbosity, Event, metric), and every other object is
// still served.
func TestPanicInOneEvaluation(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	// The real resolver of the WDS's schemas, as Setup builds it by default.
	real := checkSchemas(t, cp)
	panicsBefore := counter(t, "statusfold_errors_total", "where", "panic")
	logs := startLoggedManager(t, cp, cp.Config, aggregator.Options{Schemas: panickingSchemas{SchemaResolver: real, kind: "ReplicaSet"}})
	const ns = "panics"
	rs := replicaSet(t, c, ns, "rs", 2)
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c, policy("panics", []string{"wec1"},
		clause("apps", "replicasets", ns, []string{"rs"}, singleton),
		clause("apps", "deployments", ns, []string{"web"}, singleton)))
	report(t, c, "wec1", controlv1alpha1.SourceRef{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet",
		Namespace: ns, Name: rs.Name}, map[string]any{"replicas": int64(2), "readyReplicas": int64(2)}, applied(1))
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	expectReturn(t, c, d, "1", 3)
	expectEvent(t, c, ns, "rs", "ReconcileFailed", "injected panic")
	if n := counter(t, "statusfold_errors_total", "where", "panic"); n < panicsBefore+2 {
		t.Errorf("statusfold_errors_total{where=panic} = %v, want at least %v (retried)", n, panicsBefore+2)
	}
	if !strings.Contains(logs.String(), "injected panic for ReplicaSet") {
		t.Errorf("the panic is not in the log at default verbosity")
	}
	// Still serving after the panics: a new report reaches the Deployment.
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 1, 1), applied(1))
	expectReturn(t, c, d, "1", 1)
}

// checkSchemas is the resolver of the WDS's published schemas that Setup uses by default.
func checkSchemas(t *testing.T, cp *framework.ControlPlane) resolver.SchemaResolver {
	t.Helper()
	return check.NewDiscoverySchemas(cp.Discovery.OpenAPIV3(), 30*time.Second)
}

// managerIdentity is the user the manager runs as in a cluster: its ServiceAccount.
const managerIdentity = "system:serviceaccount:statusfold-system:statusfold-manager"

// TestFailuresVisible runs the manager with its real RBAC (config/rbac) and a kind whose status
// it is not allowed to write (an operator forgot to grant it): the failed write is visible at
// default verbosity — in the log, as an Event on the object and in statusfold_errors_total — and
// retried.
func TestFailuresVisible(t *testing.T) {
	cp := framework.RunControlPlane(t, framework.WithExtraCRDs(testCRDs()))
	c := cp.Client
	ctx := context.Background()
	ensureNamespace(t, c, "statusfold-system")
	out, stderr, err := cp.Kubectl(ctx, nil, "kustomize", filepath.Join(framework.RepoRoot(), "config", "rbac"))
	if err != nil {
		t.Fatalf("kustomize: %v: %s", err, stderr)
	}
	if _, stderr, err := cp.Kubectl(ctx, []byte(out), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply config/rbac: %v: %s", err, stderr)
	}
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	asManager := rest.CopyConfig(cp.Config)
	asManager.Impersonate = rest.ImpersonationConfig{UserName: managerIdentity}
	errsBefore := counter(t, "statusfold_errors_total", "where", "reconcile")
	logs := startLoggedManager(t, cp, asManager, aggregator.Options{})

	const ns = "visible"
	w := customObject(t, c, widgetGVK, ns, "w1")
	create(t, c, policy("visible", []string{"wec1"}, clause("example.com", "widgets", ns, []string{"w1"}, singleton)))
	report(t, c, "wec1", customRef(widgetGVK, "widgets", w), map[string]any{"phase": "Ready"}, applied(1))
	expectEvent(t, c, ns, "w1", "ReconcileFailed", "forbidden")
	eventually(t, "the failure in the log at default verbosity", func() error {
		if l := logs.String(); !strings.Contains(l, "ReconcileFailed") || !strings.Contains(l, "forbidden") {
			return fmt.Errorf("not logged")
		}
		return nil
	})
	if n := counter(t, "statusfold_errors_total", "where", "reconcile"); n <= errsBefore {
		t.Errorf("statusfold_errors_total{where=reconcile} = %v, not above %v", n, errsBefore)
	}
}

// unlistableCRD is a kind whose preferred version (v2) cannot be listed: the objects are stored
// in v1, and converting them needs a conversion webhook that nothing serves.
func unlistableCRD(t *testing.T, c client.Client) {
	t.Helper()
	utilruntime.Must(apiextensionsv1.AddToScheme(c.Scheme()))
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XPreserveUnknownFields: ptr.To(true)}}}
	}
	url := "https://127.0.0.1:1/convert"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "brokens.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Broken", ListKind: "BrokenList", Plural: "brokens", Singular: "broken"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true), version("v2", false)},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &url}}},
		},
	}
	create(t, c, crd)
	eventually(t, "CRD brokens.example.com established", func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(crd), crd); err != nil {
			return err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not established")
	})
}

// TestUnlistableResource: a resource whose list always fails (its conversion webhook is down)
// stalls nothing. A `"*"` policy that selects it still binds the other objects of its namespace,
// another policy's objects are served, and the failure is reported on the BindingPolicy.
func TestUnlistableResource(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	unlistableCRD(t, c)
	const ns, other = "unlistable", "unlistable-other"
	customObject(t, c, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Broken"}, ns, "b1")
	logs := startLoggedManager(t, cp, cp.Config, aggregator.Options{WatchSyncTimeout: 2 * time.Second})

	d := deployment(t, c, ns, "web", 3, nil)
	everything := policy("everything", []string{"wec1"})
	everything.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{{
		DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{Resources: []string{"*"}, Namespaces: []string{ns}},
		DownsyncModulation: controlv1alpha1.DownsyncModulation{WantSingletonReportedState: true}}}
	create(t, c, everything)
	d2 := deployment(t, c, other, "api", 2, nil)
	create(t, c, policy("explicit", []string{"wec1"}, clause("apps", "deployments", other, []string{"api"}, singleton)))
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	report(t, c, "wec1", deploymentRef(d2), deploymentStatus(2, 1, 1), applied(1))
	expectReturn(t, c, d2, "1", 1)
	expectReturn(t, c, d, "1", 3)
	expectEvent(t, c, "", "everything", "ResourceNotListed", "brokens")
	if !strings.Contains(logs.String(), "brokens") {
		t.Errorf("the unlistable resource is not named in the log at default verbosity")
	}
}

// TestConflictNotReapplied: when another field manager owns a status field with another value,
// statusfold writes the rest once; later evaluations of the same status do not apply it again
// (each such apply would conflict again and emit another Event). A changed status is written.
func TestConflictNotReapplied(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	startManager(t, cp, aggregator.Options{})
	const ns = "conflict"
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c, policy(ns, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton)))
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 3, 1), applied(1))
	expectReturn(t, c, d, "1", 3)
	// The other manager's write is not statusfold's own: it queues the object, whose evaluation
	// finds the same status to return (nothing to write). Awaited here, so that it is not an
	// evaluation still to come when the checks below count them.
	evals := counter(t, "statusfold_evaluations_total", "kind", "object")
	takeStatusField(t, c, d, "readyReplicas", 3)
	awaitEvaluations(t, evals+1)
	conflictsBefore := counter(t, "statusfold_status_conflicts_total", "", "")
	// Only the status changes: one WorkStatus event, one evaluation (report would make two when
	// its lastCurrencyUpdateTime moved on to the next second).
	reportStatus(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 2, 1))
	expectAvailable := func(want int64) {
		t.Helper()
		eventually(t, fmt.Sprintf("availableReplicas %d returned, readyReplicas left to the other manager", want), func() error {
			u, err := getObject(c, d, ns, d.Name)
			if err != nil {
				return err
			}
			avail, _, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas")
			ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
			if avail != want || ready != 3 {
				return fmt.Errorf("availableReplicas %d, readyReplicas %d", avail, ready)
			}
			return nil
		})
	}
	expectAvailable(2)
	// The conflicting apply is counted before the apply without readyReplicas is sent, so it is
	// counted by the time availableReplicas 2 shows.
	if n := counter(t, "statusfold_status_conflicts_total", "", ""); n < conflictsBefore+1 {
		t.Fatalf("statusfold_status_conflicts_total = %v, want at least %v: the conflict was not counted", n, conflictsBefore+1)
	}

	// Before the re-reports, the manager's cache must hold its own write of availableReplicas 2:
	// an evaluation that still read the Deployment as it was would apply again, whatever the
	// behaviour under test. Another writer's annotation on the Deployment is a later event of the
	// same watch, and it queues the object (it is not statusfold's own write): the evaluation it
	// causes reads the annotation, so the write before it too. That evaluation has nothing new to
	// write either. Nothing else evaluates the object meanwhile (statusfold's echo is dropped), so
	// the next evaluation is that one.
	evals = counter(t, "statusfold_evaluations_total", "kind", "object")
	annotate(t, c, d, "example.com/touched", "yes")
	awaitEvaluations(t, evals+1)
	conflicts := counter(t, "statusfold_status_conflicts_total", "", "")
	evals = counter(t, "statusfold_evaluations_total", "kind", "object")
	// The same reported state again, with a new lastCurrencyUpdateTime each time (one WorkStatus
	// event each): evaluations with nothing new to write. Each is awaited before the next report,
	// so they are three evaluations, not one that coalesced them.
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 3 {
		n := counter(t, "statusfold_evaluations_total", "kind", "object")
		report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 2, 1), appliedAt(1, base.Add(time.Duration(i)*time.Second)))
		awaitEvaluations(t, n+1)
	}
	eventually(t, "the re-reports evaluated", func() error {
		if n := counter(t, "statusfold_evaluations_total", "kind", "object"); n < evals+3 {
			return fmt.Errorf("%v evaluations since, want at least 3", n-evals)
		}
		return nil
	})
	// A changed status is written (and conflicts once more on the other manager's field). It is
	// also the barrier of the check below: its WorkStatus event comes after the re-reports', and
	// the objects queue hands a key to one worker at a time, so the evaluation that writes it
	// starts after the re-reports' evaluations ended, with any apply they made counted. Its own
	// conflict is counted before availableReplicas 1 shows (see above).
	reportStatus(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 1, 1))
	expectAvailable(1)
	if n := counter(t, "statusfold_status_conflicts_total", "", ""); n != conflicts+1 {
		t.Errorf("%v conflicting applies for three re-reports of an unchanged status and one change, want 1 (the change's)", n-conflicts)
	}
}

// awaitEvaluations waits until statusfold_evaluations_total{kind="object"} reaches n.
func awaitEvaluations(t *testing.T, n float64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%v evaluations of workload objects", n), func() error {
		if got := counter(t, "statusfold_evaluations_total", "kind", "object"); got < n {
			return fmt.Errorf("%v", got)
		}
		return nil
	})
}

// annotate sets an annotation on obj as another writer would (a merge patch).
func annotate(t *testing.T, c client.Client, obj client.Object, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := c.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}
