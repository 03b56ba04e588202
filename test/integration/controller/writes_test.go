package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// patchLog records the query of every PATCH request whose path contains one of the given
// resources' segments.
type patchLog struct {
	mu      sync.Mutex
	queries map[string][]string // resource → raw queries
}

func (l *patchLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPatch {
			for _, res := range []string{"combinedstatuses", "deployments"} {
				if strings.Contains(r.URL.Path, "/"+res+"/") {
					l.mu.Lock()
					l.queries[res] = append(l.queries[res], r.URL.RawQuery)
					l.mu.Unlock()
				}
			}
		}
		return rt.RoundTrip(r)
	})
}

func (l *patchLog) get(res string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.queries[res]...)
}

// TestCombinedStatusApplyIgnoresFieldValidation: statusfold's CombinedStatus applies are sent
// with fieldValidation=Ignore (they are pruned to the served schema first: docs/performance.md,
// "Writing cheaper"), with the pacer on (the default) an update is still reflected at once, and
// the returned status of a workload object is applied with the apiserver's default validation.
func TestCombinedStatusApplyIgnoresFieldValidation(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	for _, w := range []string{"wec1", "wec2"} {
		addCluster(t, c, w, map[string]string{"name": w})
	}
	ns := "field-validation"
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c,
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "fv-phase"}, Spec: controlv1alpha1.StatusCollectorSpec{Limit: 20,
			Select: []controlv1alpha1.NamedExpression{{Name: "phase", Def: "returned.status.phase"}}}},
		policy("fv", []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton, collectors("fv-phase"))),
	)
	report(t, c, "wec1", deploymentRef(d), map[string]any{"phase": "Running"}, applied(d.Generation))
	log := &patchLog{queries: map[string][]string{}}
	cfg := rest.CopyConfig(cp.Config)
	cfg.WrapTransport = log.wrap
	startLoggedManager(t, cp, cfg, aggregator.Options{})

	expectResult(t, c, d, "fv", ns, "fv-phase", [][]string{{"Running"}})
	start := time.Now()
	report(t, c, "wec1", deploymentRef(d), map[string]any{"phase": "Failed"}, applied(d.Generation))
	expectResult(t, c, d, "fv", ns, "fv-phase", [][]string{{"Failed"}})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("second update reflected after %s", took)
	}
	qs := log.get("combinedstatuses")
	if len(qs) < 2 {
		t.Fatalf("%d CombinedStatus PATCH requests, want at least 2 (one per update)", len(qs))
	}
	for _, q := range qs {
		if !strings.Contains(q, "fieldValidation=Ignore") || !strings.Contains(q, "fieldManager="+aggregator.FieldManager) ||
			!strings.Contains(q, "force=true") {
			t.Errorf("CombinedStatus PATCH with query %q, want fieldValidation=Ignore, fieldManager=%s and force=true", q, aggregator.FieldManager)
		}
	}
	eventually(t, "the returned status applied", func() error {
		if len(log.get("deployments")) == 0 {
			return fmt.Errorf("no Deployment PATCH yet")
		}
		return nil
	})
	for _, q := range log.get("deployments") {
		if strings.Contains(q, "fieldValidation") {
			t.Errorf("Deployment PATCH with query %q: want the apiserver's default field validation", q)
		}
	}
}

// TestStatusReturnDoesNotWaitForCombinedStatus: one evaluation writes the object's returned
// status and its CombinedStatus side by side, so neither waits for the other's write. Every
// CombinedStatus write is held until the test releases it; the status must be returned while it
// is held (when the return came after the CombinedStatus writes, it waited for them: a write's
// latency more on every returned status), and the CombinedStatus written once released.
func TestStatusReturnDoesNotWaitForCombinedStatus(t *testing.T) {
	ns := "side-by-side"
	cp, c, d := readyCollected(t, ns, "sbs")
	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 1, d.Generation), applied(d.Generation))
	release := make(chan struct{})
	var held atomic.Int32
	cfg := rest.CopyConfig(cp.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPatch && strings.Contains(r.URL.Path, "/combinedstatuses/") {
				held.Add(1)
				select {
				case <-release:
				case <-r.Context().Done():
					return nil, r.Context().Err()
				}
			}
			return rt.RoundTrip(r)
		})
	}
	startLoggedManager(t, cp, cfg, aggregator.Options{})
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(release) }) }
	defer releaseAll() // before the manager stops (t.Cleanup)

	eventually(t, "the status returned while the CombinedStatus write is held", func() error {
		if held.Load() == 0 {
			return fmt.Errorf("no CombinedStatus write yet")
		}
		u, err := getObject(c, d, ns, "web")
		if err != nil {
			return err
		}
		if ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas"); ready != 1 {
			return fmt.Errorf("status.readyReplicas %d, want 1 (returned)", ready)
		}
		return nil
	})
	if _, err := combinedStatus(c, d, "sbs", ns); !apierrors.IsNotFound(err) {
		t.Fatalf("the CombinedStatus exists while its write is held (%v): the test does not hold it", err)
	}
	releaseAll()
	expectResult(t, c, d, "sbs", ns, "sbs-ready", [][]string{{"1"}})
}

// TestUnboundObjectsNotQueued: with a policy that selects by labels only (every resource is
// watched), a new object that no Binding lists and that carries no return label is not queued
// for evaluation (at start that was every Namespace, ManagedCluster, ClusterRole… of the WDS:
// 2,200 keys at the load test's default size, which held the Pacer at its cap); an object that
// the policy selects is queued once its Binding lists it.
func TestUnboundObjectsNotQueued(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	ns := "unbound"
	ensureNamespace(t, c, ns)
	create(t, c, policy("by-label", []string{"wec1"}, func(bp *controlv1alpha1.BindingPolicy) {
		bp.Spec.Downsync = append(bp.Spec.Downsync, controlv1alpha1.DownsyncPolicyClause{
			DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}}}}})
	}))
	startManager(t, cp, aggregator.Options{})
	expectCollectorsCondition(t, c, "by-label", corev1.ConditionTrue, "")
	inBinding := func(name string) func() error {
		return func() error {
			var b controlv1alpha1.Binding
			if err := c.Get(context.Background(), client.ObjectKey{Name: "by-label"}, &b); err != nil {
				return err
			}
			for _, bo := range aggregator.BoundObjects(&b.Spec) {
				if bo.Namespace == ns && bo.Name == name {
					return nil
				}
			}
			return fmt.Errorf("%s not in the Binding", name)
		}
	}
	mk := func(name string, labels map[string]string) {
		create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}})
	}
	mk("first", map[string]string{"app": "web"}) // the ConfigMap watch is up once it is bound
	eventually(t, "the first selected ConfigMap bound", inBinding("first"))
	adds0 := counter(t, "workqueue_adds_total", "name", "statusfold_objects")
	const unbound = 20
	for i := range unbound {
		mk(fmt.Sprintf("other-%d", i), nil)
	}
	// The marker's event comes after the others' on the same watch, and the Binding lists it
	// only after its event queued the policy: once it is bound, the others' events were handled.
	mk("marker", map[string]string{"app": "web"})
	eventually(t, "the marker bound", inBinding("marker"))
	// By now the unbound ConfigMaps' events were handled; the marker's own Add (from the Binding
	// that lists it) may or may not have come yet: at most that one.
	if adds := counter(t, "workqueue_adds_total", "name", "statusfold_objects") - adds0; adds > 1 {
		t.Errorf("%v objects queued for %d unbound ConfigMaps and one bound one: want only the bound one (the unbound ones not queued)", adds, unbound)
	}
	eventually(t, "the marker queued once bound", func() error {
		if adds := counter(t, "workqueue_adds_total", "name", "statusfold_objects") - adds0; adds < 1 {
			return fmt.Errorf("no object queued")
		}
		return nil
	})
	if adds := counter(t, "workqueue_adds_total", "name", "statusfold_objects") - adds0; adds != 1 {
		t.Errorf("%v objects queued: want 1, the marker once bound", adds)
	}
}

// TestEchoBeforeAnswerNotEvaluated: the watch may deliver statusfold's own write before the
// write's answer (here every CombinedStatus and returned-status answer is held back 300 ms after
// the apiserver has made the write). That echo changes no input, so it must not cost another
// evaluation: an update of the reported state is evaluated once, not once more per write it
// causes.
//
// Nothing here waits a fixed time. Before the updates, the manager's first pass (every object the
// start queued, the sweep for labelled objects included) is done and no held answer is in flight.
// After each update, the test waits until the manager has recognised both writes' echoes
// (statusfold_own_write_echoes_total): from then on nothing of that update is left to queue an
// evaluation, so the count of evaluations is final. An echo taken for another writer's change is
// never counted there, and this wait fails.
func TestEchoBeforeAnswerNotEvaluated(t *testing.T) {
	ns := "echo-first"
	cp, c, d := readyCollected(t, ns, "echo")
	var slowed, inFlight atomic.Int32
	cfg := rest.CopyConfig(cp.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			slow := r.Method == http.MethodPatch &&
				(strings.Contains(r.URL.Path, "/combinedstatuses/") || strings.HasSuffix(r.URL.Path, "/deployments/web/status"))
			if slow {
				inFlight.Add(1)
				defer inFlight.Add(-1)
			}
			resp, err := rt.RoundTrip(r)
			if err == nil && slow {
				slowed.Add(1)
				time.Sleep(300 * time.Millisecond) // the write is made; its echo is on its way
			}
			return resp, err
		})
	}
	var firstPass sync.Once
	firstPassDone := make(chan struct{})
	startLoggedManager(t, cp, cfg, aggregator.Options{AfterFirstPass: func() { firstPass.Do(func() { close(firstPassDone) }) }})

	report(t, c, "wec1", deploymentRef(d), deploymentStatus(3, 1, d.Generation), applied(d.Generation))
	expectResult(t, c, d, "echo", ns, "echo-ready", [][]string{{"1"}})
	expectReturn(t, c, d, "1", 1)
	select {
	case <-firstPassDone:
	case <-time.After(waitTimeout):
		t.Fatal("the manager's first pass not done")
	}
	answered := func() error {
		if n := inFlight.Load(); n > 0 {
			return fmt.Errorf("%d held answers in flight", n)
		}
		return nil
	}
	eventually(t, "the first writes answered", answered)
	echoes := func() float64 {
		return counter(t, "statusfold_own_write_echoes_total", "what", "combinedstatus") +
			counter(t, "statusfold_own_write_echoes_total", "what", "status")
	}
	wsKey := client.ObjectKey{Namespace: "wec1", Name: fmt.Sprintf("deployments-%s-web", ns)}
	for i, ready := range []int64{2, 3} {
		evals, echoesBefore, slowedBefore := counter(t, "statusfold_evaluations_total", "kind", "object"), echoes(), slowed.Load()
		// One write of the WorkStatus (its status), so one event to evaluate.
		var ws controlv1alpha1.WorkStatus
		if err := c.Get(context.Background(), wsKey, &ws); err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(deploymentStatus(3, ready, d.Generation))
		if err != nil {
			t.Fatal(err)
		}
		ws.Status.Raw = raw
		if err := c.Status().Update(context.Background(), &ws); err != nil {
			t.Fatal(err)
		}
		expectResult(t, c, d, "echo", ns, "echo-ready", [][]string{{fmt.Sprint(ready)}})
		expectReturn(t, c, d, "1", ready)
		eventually(t, fmt.Sprintf("update %d: its writes answered", i), answered)
		eventually(t, fmt.Sprintf("update %d: the echoes of its two writes recognised", i), func() error {
			if n := echoes() - echoesBefore; n < 2 {
				return fmt.Errorf("%v echoes recognised, want 2 (the CombinedStatus and the status)", n)
			}
			return nil
		})
		if n := slowed.Load() - slowedBefore; n != 2 {
			t.Fatalf("update %d: %d writes held back, want 2 (the CombinedStatus and the status): the test does not make the echoes come first", i, n)
		}
		if n := counter(t, "statusfold_evaluations_total", "kind", "object") - evals; n != 1 {
			t.Errorf("update %d: %v evaluations, want 1 (the echoes of its two writes evaluated)", i, n)
		}
	}
}

// readyCollected starts a control plane with one WEC (wec1) and a Deployment ns/web that policy
// name places there, returning its status (singleton) and collecting its readyReplicas (collector
// name-ready).
func readyCollected(t *testing.T, ns, name string) (*framework.ControlPlane, client.Client, *appsv1.Deployment) {
	t.Helper()
	cp := framework.RunControlPlane(t)
	c := cp.Client
	addCluster(t, c, "wec1", map[string]string{"name": "wec1"})
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c,
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: name + "-ready"}, Spec: controlv1alpha1.StatusCollectorSpec{Limit: 20,
			Select: []controlv1alpha1.NamedExpression{{Name: "ready", Def: "returned.status.readyReplicas"}}}},
		policy(name, []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton, collectors(name+"-ready"))),
	)
	return cp, c, d
}
