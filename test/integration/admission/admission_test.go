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

// badObjects are rejected at `kubectl create`; want lists what the output must contain, field
// paths first.
var badObjects = []struct {
	name, yaml string
	want       []string
}{
	{"collector: select and combinedFields", `
kind: StatusCollector
metadata: {name: select-and-combined}
spec:
  select: [{name: wec, def: inventory.name}]
  combinedFields: [{name: count, type: COUNT}]`,
		[]string{`spec.select: Forbidden: select and combinedFields are mutually exclusive`}},
	{"collector: missing subject", `
kind: StatusCollector
metadata: {name: missing-subject}
spec:
  combinedFields: [{name: total, type: SUM}]`,
		[]string{`spec.combinedFields[0].subject: Required value: SUM needs a subject`}},
	{"collector: misspelt CEL field", `
kind: StatusCollector
metadata: {name: misspelt}
spec:
  filter: 'inventory.nmae == "edge1"'
  select: [{name: wec, def: inventory.name}]`,
		[]string{`spec.filter: Invalid value: "inventory.nmae == \"edge1\"": compilation failed: ERROR: <input>:1:10: undefined field 'nmae'`}},
	{"collector: syntax error", `
kind: StatusCollector
metadata: {name: syntax}
spec:
  filter: 'returned.status.replicas > '
  select: [{name: wec, def: inventory.name}]`,
		[]string{`spec.filter: Invalid value: "returned.status.replicas > ": compilation failed: ERROR: <input>:1:28: Syntax error`}},
	{"collector: groupBy without combinedFields", `
kind: StatusCollector
metadata: {name: groupby-select}
spec:
  groupBy: [{name: phase, def: returned.status.phase}]
  select: [{name: wec, def: inventory.name}]`,
		[]string{`spec.groupBy: Forbidden: groupBy needs combinedFields`}},
	{"collector: neither select nor combinedFields", `
kind: StatusCollector
metadata: {name: nothing}
spec:
  filter: 'true'`,
		[]string{`spec.combinedFields: Required value: one of select or combinedFields is required`}},
	{"collector: COUNT with subject", `
kind: StatusCollector
metadata: {name: count-subject}
spec:
  combinedFields: [{name: count, type: COUNT, subject: returned.status.replicas}]`,
		[]string{`spec.combinedFields[0].subject: Forbidden: COUNT takes no subject`}},
	{"collector: duplicate column", `
kind: StatusCollector
metadata: {name: duplicate-column}
spec:
  groupBy: [{name: count, def: inventory.name}]
  combinedFields: [{name: count, type: COUNT}]`,
		[]string{`spec.combinedFields[0].name: Duplicate value: "count"`}},
	{"collector: filter not bool", `
kind: StatusCollector
metadata: {name: filter-string}
spec:
  filter: inventory.name
  select: [{name: wec, def: inventory.name}]`,
		[]string{`spec.filter: Invalid value: "inventory.name": filter must evaluate to bool, but its type is string`}},
	{"collector: empty expression", `
kind: StatusCollector
metadata: {name: empty-def}
spec:
  select: [{name: wec, def: ""}]`,
		[]string{`spec.select[0].def: Required value`}},
	{"collector: bad regex literal", `
kind: StatusCollector
metadata: {name: bad-regex}
spec:
  select: [{name: m, def: 'inventory.name.matches("[")'}]`,
		[]string{`spec.select[0].def: Invalid value: "inventory.name.matches(\"[\")": compilation failed`}},
	{"collector: cost over budget", `
kind: StatusCollector
metadata: {name: too-costly}
spec:
  select:
  - name: x
    def: 'returned.status.a.all(x, returned.status.b.all(y, returned.status.c.all(z, string(x) + string(y) + string(z) != "")))'`,
		[]string{`spec.select[0].def: Forbidden: estimated expression cost exceeds budget`}},
	{"collector: SUM of a map", `
kind: StatusCollector
metadata: {name: sum-map}
spec:
  combinedFields: [{name: s, type: SUM, subject: inventory.labels}]`,
		[]string{`spec.combinedFields[0].subject: Invalid value: "inventory.labels": SUM subject must evaluate to int, uint, double, string or dyn`}},
	{"collector: all errors at once", `
kind: StatusCollector
metadata: {name: all-at-once}
spec:
  filter: 'inventory.nmae == "x"'
  select: [{name: wec, def: inventory.name}]
  combinedFields: [{name: total, type: MAX}]`,
		[]string{`spec.select: Forbidden`, `spec.filter: Invalid value`, `spec.combinedFields[0].subject: Required value: MAX needs a subject`}},
	{"classifier: name format", `
kind: ContentClassifier
metadata: {name: jobs}
spec:
  dontPropagatePointers: [[status, ready]]`,
		[]string{`metadata.name: Invalid value: "jobs": must be resource.version.group, or resource.version for the core group`}},
	{"classifier: version", `
kind: ContentClassifier
metadata: {name: jobs.1.batch}
spec: {}`,
		[]string{`metadata.name: Invalid value: "jobs.1.batch": version "1": must be a Kubernetes API version such as v1, v1beta1 or v2alpha3`}},
	{"classifier: status made desired", `
kind: ContentClassifier
metadata: {name: jobs.v1.batch}
spec:
  desiredStatePointers: [[status, ready]]`,
		[]string{`spec.desiredStatePointers[0]: Invalid value: ["status","ready"]: no part of .status can be made desired state`}},
	{"classifier: empty pointer", `
kind: ContentClassifier
metadata: {name: pods.v1}
spec:
  dontPropagatePointers: [[]]`,
		[]string{`spec.dontPropagatePointers[0]: Invalid value: []: the empty pointer (the whole object) cannot be classified`}},
	{"classifier: duplicate pointer", `
kind: ContentClassifier
metadata: {name: jobs.v1.batch}
spec:
  dontPropagatePointers: [[status, ready], [status, ready]]`,
		[]string{`spec.dontPropagatePointers[1]: Duplicate value: ["status","ready"]`}},
	{"classifier: pointer in both lists", `
kind: ContentClassifier
metadata: {name: jobs.v1.batch}
spec:
  desiredStatePointers: [[spec, suspend]]
  dontPropagatePointers: [[spec, suspend]]`,
		[]string{`spec.dontPropagatePointers[0]: Invalid value: ["spec","suspend"]: also listed in spec.desiredStatePointers[0]`}},
	{"policy: clause without object test", `
kind: BindingPolicy
metadata: {name: no-test}
spec:
  clusterSelectors: [{matchLabels: {location-group: edge}}]
  downsync: [{statusCollectors: [count-wecs]}]`,
		[]string{`spec.downsync[0]: Required value: must name at least one of apiGroup, resources, namespaces, namespaceSelectors, objectSelectors or objectNames`}},
	{"policy: selector operator", `
kind: BindingPolicy
metadata: {name: bad-operator}
spec:
  clusterSelectors: [{matchExpressions: [{key: region, operator: Contains, values: [eu]}]}]
  downsync: [{resources: ["*"]}]`,
		[]string{`spec.clusterSelectors[0].matchExpressions[0].operator: Invalid value: "Contains": not a valid selector operator`}},
	{"policy: In without values", `
kind: BindingPolicy
metadata: {name: in-without-values}
spec:
  clusterSelectors: [{matchLabels: {location-group: edge}}]
  downsync: [{objectSelectors: [{matchExpressions: [{key: app, operator: In}]}]}]`,
		[]string{`spec.downsync[0].objectSelectors[0].matchExpressions[0].values: Required value`}},
	{"policy: label key", `
kind: BindingPolicy
metadata: {name: bad-label-key}
spec:
  clusterSelectors: [{matchLabels: {location-group: edge}}]
  downsync: [{namespaceSelectors: [{matchLabels: {"bad key": x}}]}]`,
		[]string{`spec.downsync[0].namespaceSelectors[0].matchLabels: Invalid value: "bad key"`}},
	{"policy: resource name", `
kind: BindingPolicy
metadata: {name: bad-resource}
spec:
  clusterSelectors: [{matchLabels: {location-group: edge}}]
  downsync: [{apiGroup: apps, resources: [Deployments]}]`,
		[]string{`spec.downsync[0].resources[0]: Invalid value: "Deployments"`}},
	{"aggregation policy: Rego does not compile", `
apiVersion: policy.statusfold.dev/v1alpha1
kind: AggregationPolicy
metadata: {name: broken}
spec:
  target: {group: apps, kind: Deployment}
  rego: "package statusfold.custom\nthis is not rego"`,
		[]string{`spec.rego: Invalid value`}},
}

// yamlDoc completes a test object with the control.kubestellar.io apiVersion when it has none.
func yamlDoc(s string) string {
	if strings.HasPrefix(strings.TrimSpace(s), "apiVersion:") {
		return s
	}
	return "apiVersion: control.kubestellar.io/v1alpha1" + s
}

func TestAdmission(t *testing.T) {
	e := startAdmission(t)
	ctx := context.Background()

	t.Run("bad objects are rejected with field paths", func(t *testing.T) {
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
	})

	t.Run("the examples of KubeStellar's docs are admitted", func(t *testing.T) {
		dir := filepath.Join(framework.RepoRoot(), "api", "control", "v1alpha1", "testdata")
		for _, f := range []string{"statuscollectors.yaml", "contentclassifier.yaml", "bindingpolicies.yaml"} {
			out, ok := e.kubectl(t, "", "apply", "-f", filepath.Join(dir, f))
			if !ok {
				t.Errorf("%s rejected:\n%s", f, out)
			}
		}
	})

	t.Run("limit is defaulted", func(t *testing.T) {
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
		if err := e.cp.Client.Get(ctx, client.ObjectKey{Name: "zero-limit"}, sc); err != nil {
			t.Fatal(err)
		}
		if sc.Spec.Limit != controlv1alpha1.DefaultLimit {
			t.Errorf("limit %d, want %d", sc.Spec.Limit, controlv1alpha1.DefaultLimit)
		}
	})

	t.Run("warnings reach the client", func(t *testing.T) {
		out, ok := e.kubectl(t, yamlDoc(`
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
  select: [{name: wec, def: inventory.name}]`), "apply", "-f", "-")
		if !ok {
			t.Fatalf("rejected:\n%s", out)
		}
		for _, w := range []string{
			`Warning: collector "ready-count": spec.combinedFields[0].subject: no such field 'avaliableReplicas' in apps/v1 Deployment .status`,
			`Warning: spec.downsync[0].statusCollectors[1]: StatusCollector "not-there" not found`,
			`Warning: spec.downsync[1].resources[0]: resource "widgets" is not served in API group "example.com"`,
			`Warning: spec.downsync[2].resources[0]: resource "deploymentz" is not served in any API group`,
			`Warning: spec.dontPropagatePointers[0]: batch/v1 Job has no field "readyy" at "/status", so this pointer matches nothing`,
			`Warning: metadata.name: resource "widgets" of example.com/v1 is not served; the classifier takes effect when it is`,
			`Warning: spec.filter: is the constant false, so every row is dropped`,
		} {
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

	t.Run("certificate rotation while serving causes no failed admission", func(t *testing.T) {
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
	})

	t.Run("replicas started together share one CA", func(t *testing.T) { testReplicasShareOneCA(t, e) })

	t.Run("apply round trip with and without the webhook", func(t *testing.T) {
		const n = 40
		create := func(prefix string) time.Duration {
			var times []time.Duration
			for i := 0; i < n; i++ {
				sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i)},
					Spec: controlv1alpha1.StatusCollectorSpec{
						Filter:  ptrExpr(`returned.status.conditions.exists(c, c.type == "Available" && c.status == "True")`),
						GroupBy: []controlv1alpha1.NamedExpression{{Name: "region", Def: `inventory.labels["region"]`}},
						CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: "COUNT"},
							{Name: "ready", Type: "SUM", Subject: ptrExpr("returned.status.readyReplicas")}}}}
				start := time.Now()
				if err := e.cp.Client.Create(ctx, sc); err != nil {
					t.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			return times[n/2]
		}
		with := create("with")
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
		without := create("without")

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
		t.Logf("create round trip, median of %d: with webhooks %s, without %s, ratio %.2f", n, with, without, float64(with)/float64(without))
		if out := os.Getenv("ADMISSION_ROUNDTRIP_OUT"); out != "" {
			_ = os.WriteFile(out, []byte(fmt.Sprintf("%d %d\n", with.Microseconds(), without.Microseconds())), 0o644)
		}
	})
}

func ptrExpr(s string) *controlv1alpha1.Expression { e := controlv1alpha1.Expression(s); return &e }
