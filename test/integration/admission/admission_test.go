package admission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks"
)

// TestAdmission runs statusfold's webhooks (with built-in certificates) against a real apiserver
// and checks what users see at `kubectl create` and `kubectl apply` (docs/admission.md, "Every
// check, with the message users see"), certificate rotation and replicas under load, and the
// cost of the webhook round trip.
func TestAdmission(t *testing.T) {
	e := startAdmission(t)
	t.Run("bad objects are rejected with field paths", func(t *testing.T) { testBadObjectsRejected(t, e) })
	t.Run("the examples of KubeStellar's docs are admitted", func(t *testing.T) {
		dir := filepath.Join(framework.RepoRoot(), "api", "control", "v1alpha1", "testdata")
		for _, f := range []string{"statuscollectors.yaml", "contentclassifier.yaml", "bindingpolicies.yaml"} {
			out, ok := e.kubectl(t, "", "apply", "-f", filepath.Join(dir, f))
			if !ok {
				t.Errorf("%s rejected:\n%s", f, out)
			}
		}
	})
	t.Run("limit is defaulted", func(t *testing.T) { testLimitDefaulted(t, e) })
	t.Run("warnings reach the client", func(t *testing.T) {
		out, ok := e.kubectl(t, yamlDoc(warnedObjects), "apply", "-f", "-")
		if !ok {
			t.Fatalf("rejected:\n%s", out)
		}
		for _, w := range wantWarnings {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
		t.Logf("%s", out)
	})
	t.Run("a collector is checked against the policies that apply it", func(t *testing.T) {
		out, ok := e.kubectl(t, yamlDoc(`
kind: StatusCollector
metadata: {name: ready-count}
spec:
  combinedFields: [{name: ready-total, type: SUM, subject: returned.status.avaliableReplicas}]`), "apply", "-f", "-")
		want := `Warning: collector "ready-count": spec.combinedFields[0].subject: no such field 'avaliableReplicas' in apps/v1 Deployment .status (applied by BindingPolicy "nginx-ready")`
		if !ok || !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	})
	t.Run("certificate rotation while serving causes no failed admission", func(t *testing.T) { testRotationUnderLoad(t, e) })
	t.Run("replicas started together share one CA", func(t *testing.T) { testReplicasShareOneCA(t, e) })
	t.Run("apply round trip with and without the webhook", func(t *testing.T) { testRoundTripWithAndWithout(t, e) })
}

// testBadObjectsRejected: every one of badObjects is rejected at `kubectl create` with an
// Invalid error that names the fields.
func testBadObjectsRejected(t *testing.T, e *env) {
	if len(badObjects) < 20 {
		t.Fatalf("only %d bad objects", len(badObjects))
	}
	for _, bo := range badObjects {
		t.Run(bo.name, func(t *testing.T) {
			out, ok := e.kubectl(t, yamlDoc(bo.yaml), "create", "-f", "-")
			if ok {
				t.Fatalf("admitted:\n%s", out)
			}
			if !strings.Contains(out, "is invalid") {
				t.Errorf("not an Invalid error:\n%s", out)
			}
			for _, w := range bo.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			// TestOfflineParity holds statusfold validate's text equal to this output.
			t.Logf("%s", out)
		})
	}
}

// testLimitDefaulted: a StatusCollector's limit 0 is stored as the default limit (the mutating
// webhook).
func testLimitDefaulted(t *testing.T, e *env) {
	out, ok := e.kubectl(t, yamlDoc(`
kind: StatusCollector
metadata: {name: zero-limit}
spec:
  limit: 0
  combinedFields: [{name: count, type: COUNT}]`), "create", "-f", "-")
	if !ok {
		t.Fatalf("rejected:\n%s", out)
	}
	sc := &controlv1alpha1.StatusCollector{}
	if err := e.cp.Client.Get(context.Background(), client.ObjectKey{Name: "zero-limit"}, sc); err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Limit != controlv1alpha1.DefaultLimit {
		t.Errorf("limit %d, want %d", sc.Spec.Limit, controlv1alpha1.DefaultLimit)
	}
}

// warnedObjects are admitted with warnings: wantWarnings.
const warnedObjects = `
kind: StatusCollector
metadata: {name: ready-count}
spec:
  combinedFields: [{name: ready, type: SUM, subject: returned.status.avaliableReplicas}]
---
apiVersion: control.kubestellar.io/v1alpha1
kind: BindingPolicy
metadata: {name: nginx-ready}
spec:
  clusterSelectors: [{matchLabels: {location-group: edge}}]
  downsync:
  - apiGroup: apps
    resources: [deployments]
    statusCollectors: [ready-count, not-there]
  - apiGroup: example.com
    resources: [widgets]
    statusCollectors: [ready-count]
  - resources: [deploymentz]
    statusCollectors: [ready-count]
---
apiVersion: control.kubestellar.io/v1alpha1
kind: ContentClassifier
metadata: {name: jobs.v1.batch}
spec:
  dontPropagatePointers: [[status, readyy]]
---
apiVersion: control.kubestellar.io/v1alpha1
kind: ContentClassifier
metadata: {name: widgets.v1.example.com}
spec:
  dontPropagatePointers: [[status, x]]
---
apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: never}
spec:
  filter: "false"
  select: [{name: wec, def: inventory.name}]`

// wantWarnings are the warnings `kubectl apply` prints for warnedObjects.
var wantWarnings = []string{
	`Warning: collector "ready-count": spec.combinedFields[0].subject: no such field 'avaliableReplicas' in apps/v1 Deployment .status`,
	`Warning: spec.downsync[0].statusCollectors[1]: StatusCollector "not-there" not found`,
	`Warning: spec.downsync[1].resources[0]: resource "widgets" is not served in API group "example.com"`,
	`Warning: spec.downsync[2].resources[0]: resource "deploymentz" is not served in any API group`,
	`Warning: spec.dontPropagatePointers[0]: batch/v1 Job has no field "readyy" at "/status", so this pointer matches nothing`,
	`Warning: metadata.name: resource "widgets" of example.com/v1 is not served; the classifier takes effect when it is`,
	`Warning: spec.filter: is the constant false, so every row is dropped`,
}

// testRotationUnderLoad rotates the serving certificate, then the CA, while two clients create
// StatusCollectors (dry run) without pause: no admission may fail.
func testRotationUnderLoad(t *testing.T, e *env) {
	ctx := context.Background()
	var requests, failures atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rot-%d-%d", w, i)},
					Spec: controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{{Name: "wec", Def: "inventory.name"}}}}
				requests.Add(1)
				if err := e.cp.Client.Create(ctx, sc, client.DryRunAll); err != nil {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	// The pauses are the load's duration around each rotation: requests keep arriving before,
	// during and after it.
	before := e.servedSerial(t)
	time.Sleep(300 * time.Millisecond)
	if err := e.rotator.Rotate(ctx, false); err != nil {
		t.Fatal(err)
	}
	afterServing := e.servedSerial(t)
	time.Sleep(300 * time.Millisecond)
	if err := e.rotator.Rotate(ctx, true); err != nil { // new CA: bundle first, then the certificate
		t.Fatal(err)
	}
	afterCA := e.servedSerial(t)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("%d admission requests during two rotations, %d failed", requests.Load(), failures.Load())
	if failures.Load() > 0 {
		t.Errorf("%d of %d admissions failed during rotation; first: %v", failures.Load(), requests.Load(), firstFailure.Load())
	}
	if before == afterServing || afterServing == afterCA {
		t.Errorf("served certificate did not change: %s, %s, %s", before, afterServing, afterCA)
	}
	if requests.Load() < 10 {
		t.Errorf("only %d requests: the rotation was not exercised under load", requests.Load())
	}
}

// roundTripCollectors is how many StatusCollectors testRoundTripWithAndWithout creates each way.
const roundTripCollectors = 40

// testRoundTripWithAndWithout times StatusCollector creates with the webhooks and, after their
// configurations are deleted, without them; then an invalid object that got in while they were
// away may have its metadata updated but not its spec once they are back.
func testRoundTripWithAndWithout(t *testing.T, e *env) {
	ctx := context.Background()
	with := createCollectorsTimed(t, e, "with")
	v := &metav1.PartialObjectMetadata{}
	v.SetName(webhooks.ValidatingConfigurationName)
	v.SetGroupVersionKind(admissionGVK("ValidatingWebhookConfiguration"))
	m := &metav1.PartialObjectMetadata{}
	m.SetName(webhooks.MutatingConfigurationName)
	m.SetGroupVersionKind(admissionGVK("MutatingWebhookConfiguration"))
	for _, obj := range []client.Object{v, m} {
		if err := e.cp.Client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the apiserver stops calling the webhook: a bad collector gets in.
	if wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		bad := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "bad-probe"},
			Spec: controlv1alpha1.StatusCollectorSpec{Limit: 5}}
		return e.cp.Client.Create(ctx, bad, client.DryRunAll) == nil, nil
	}) != nil {
		t.Fatal("webhook still called after its configurations were deleted")
	}
	without := createCollectorsTimed(t, e, "without")

	// An invalid object gets in while the webhook is away.
	bad := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "got-in"},
		Spec: controlv1alpha1.StatusCollectorSpec{Limit: 5}}
	if err := e.cp.Client.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	e.reinstall(t)
	bad.Labels = map[string]string{"team": "a"}
	if err := e.cp.Client.Update(ctx, bad); err != nil {
		t.Errorf("metadata-only update of an invalid object that got in: %v", err)
	}
	bad.Spec.Limit = 6
	if err := e.cp.Client.Update(ctx, bad); err == nil || !strings.Contains(err.Error(), "one of select or combinedFields is required") {
		t.Errorf("spec update of an invalid object: %v, want rejection", err)
	}
	t.Logf("create round trip, median of %d: with webhooks %s, without %s, ratio %.2f", roundTripCollectors, with, without, float64(with)/float64(without))
	if out := os.Getenv("ADMISSION_ROUNDTRIP_OUT"); out != "" {
		_ = os.WriteFile(out, []byte(fmt.Sprintf("%d %d\n", with.Microseconds(), without.Microseconds())), 0o644)
	}
}

// createCollectorsTimed creates roundTripCollectors StatusCollectors named prefix-N and returns
// the median time of a create.
func createCollectorsTimed(t *testing.T, e *env, prefix string) time.Duration {
	t.Helper()
	var times []time.Duration
	for i := 0; i < roundTripCollectors; i++ {
		sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i)},
			Spec: controlv1alpha1.StatusCollectorSpec{
				Filter:  ptrExpr(`returned.status.conditions.exists(c, c.type == "Available" && c.status == "True")`),
				GroupBy: []controlv1alpha1.NamedExpression{{Name: "region", Def: `inventory.labels["region"]`}},
				CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: "COUNT"},
					{Name: "ready", Type: "SUM", Subject: ptrExpr("returned.status.readyReplicas")}}}}
		start := time.Now()
		if err := e.cp.Client.Create(context.Background(), sc); err != nil {
			t.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times[roundTripCollectors/2]
}

func ptrExpr(s string) *controlv1alpha1.Expression { e := controlv1alpha1.Expression(s); return &e }
