package admission

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/test/hostile"
	"github.com/statusfold/statusfold/webhooks/check"
	"github.com/statusfold/statusfold/webhooks/offline"
	"github.com/statusfold/statusfold/webhooks/offline/kubectltest"
)

// schemaObjects are mistakes that the CRD schemas (or the apiserver's decoding) catch before
// any webhook sees the object: common type mistakes first (a number, string or list where
// another type is expected; the clause fields of KubeStellar before 0.26), then others.
var schemaObjects = []struct{ name, yaml string }{
	{"a number where a string is expected", `
kind: StatusCollector
metadata: {name: number-subject}
spec:
  combinedFields: [{name: total, type: SUM, subject: 5}]`},
	{"a string where a list is expected", `
kind: StatusCollector
metadata: {name: string-select}
spec:
  select: inventory.name`},
	{"a number as a label value", `
kind: BindingPolicy
metadata:
  name: number-label
  labels: {team: 7}
spec:
  clusterSelectors: [{matchLabels: {location-group: edge}}]
  downsync: [{resources: ["*"]}]`},
	{"a string for a boolean flag", `
kind: BindingPolicy
metadata: {name: string-flag}
spec:
  clusterSelectors: [{matchLabels: {location-group: edge}}]
  downsync: [{resources: ["*"], wantSingletonReportedState: "yes"}]`},
	{"the spec-level wantSingletonReportedState of KubeStellar before 0.26", `
kind: BindingPolicy
metadata: {name: spec-level-singleton}
spec:
  clusterSelectors: [{matchLabels: {location-group: edge}}]
  wantSingletonReportedState: true
  downsync: [{resources: ["*"], statusCollectors: [count-wecs]}]`},
	{"the pre-0.26 statusCollection clause", `
kind: BindingPolicy
metadata: {name: status-collection}
spec:
  clusterSelectors: [{matchLabels: {location-group: edge}}]
  downsync: [{resources: ["*"], statusCollection: {statusCollectors: [count-wecs]}}]`},
	{"several schema errors at once", `
kind: StatusCollector
metadata: {name: several}
spec:
  limit: -3
  combinedFields: [{name: "", type: MEDIAN, subject: 5}]`},
	{"a number for the limit, as a string", `
kind: StatusCollector
metadata: {name: string-limit}
spec:
  limit: "5"
  select: [{name: wec, def: inventory.name}]`},
	{"an unknown field in a clause and one at the top", `
kind: BindingPolicy
metadata: {name: unknown-fields}
spec:
  clusterSelectors: [{matchLabels: {location-group: edge}}]
  downsync: [{resources: ["*"], wantMultiWecReportedState: true}]
extra: 1`},
	{"a name that is not a DNS subdomain", `
kind: ContentClassifier
metadata: {name: Jobs_v1}
spec: {}`},
	{"a metadata that is not an object", `
kind: StatusCollector
metadata: []
spec:
  combinedFields: [{name: count, type: COUNT}]`},
	{"a pointer token that is not a string", `
kind: ContentClassifier
metadata: {name: jobs.v1.batch}
spec:
  dontPropagatePointers: [[status, 3]]`},
}

// TestOfflineParity checks that `statusfold validate` prints, for every object that the apiserver
// rejects, exactly what `kubectl apply` prints against a real apiserver with statusfold's CRDs
// and webhooks: the schema-level mistakes above, every bad object of TestAdmission (most get
// past the schema to the webhook), and every object of the hostile corpus (test/hostile) that
// the schema rejects.
func TestOfflineParity(t *testing.T) {
	framework.RequireIntegration(t)
	adm, checker := offlineAdmission(t)
	ctx := context.Background()
	type parityCase struct {
		name string
		body []byte // JSON, as kubectl sends it
	}
	var cases []parityCase
	toJSON := func(name, doc string) []byte {
		b, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return b
	}
	for _, so := range schemaObjects {
		cases = append(cases, parityCase{"schema: " + so.name, toJSON(so.name, yamlDoc(so.yaml))})
	}
	// Documents that kubectl cannot decode, whatever they were meant to be.
	cases = append(cases, parityCase{"not an object", []byte("42")},
		parityCase{"no kind", []byte(`{"apiVersion": "control.kubestellar.io/v1alpha1", "metadata": {"name": "x"}}`)})
	for _, bo := range badObjects {
		cases = append(cases, parityCase{"admission: " + bo.name, toJSON(bo.name, yamlDoc(bo.yaml))})
	}
	corpus, err := hostile.LoadCorpus(filepath.Join(framework.RepoRoot(), "test", "hostile", "testdata"), filepath.Join(t.TempDir(), "canary.json"))
	if err != nil {
		t.Fatal(err)
	}
	hostileRejected := 0
	for _, c := range corpus {
		apiVersion := "control.kubestellar.io/v1alpha1"
		switch c.Kind {
		case "StatusCollector", "ContentClassifier":
		case "AggregationPolicy":
			apiVersion = "policy.statusfold.dev/v1alpha1"
		default:
			continue
		}
		obj := map[string]any{"apiVersion": apiVersion, "kind": c.Kind}
		for k, v := range c.Object {
			obj[k] = v
		}
		body, err := json.Marshal(obj)
		if err != nil {
			t.Fatalf("hostile %s: %v", c.Name, err)
		}
		if o, ok := adm.Admit(ctx, "STDIN", body); !ok || o.Err == nil {
			continue // the schema accepts it: the hostile test checks what the webhook says
		}
		hostileRejected++
		cases = append(cases, parityCase{"hostile: " + c.Name, body})
	}
	if hostileRejected == 0 {
		t.Error("no object of the hostile corpus is rejected by the schema: the corpus changed, or the schema is not applied")
	}
	t.Logf("%d cases, %d of them from the hostile corpus", len(cases), hostileRejected)

	e := startAdmission(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			online, ok := e.kubectl(t, string(c.body), "apply", "-f", "-")
			if ok {
				t.Fatalf("admitted:\n%s", online)
			}
			o, ours := adm.Admit(ctx, "STDIN", c.body)
			if !ours {
				t.Fatal("offline: not one of statusfold's kinds")
			}
			o.Check(ctx, checker)
			if o.Err == nil {
				t.Fatalf("offline: admitted; kubectl printed:\n%s", online)
			}
			// The webhook's warnings need lookups that the offline checker does not have.
			// The offline error, printed by kubectl's printer, is what kubectl printed.
			printed := kubectltest.Message(o.Err, "STDIN")
			if want := withoutWarnings(online); !sameMessage(printed, want) {
				t.Errorf("offline:\n%s\nkubectl apply:\n%s", printed, want)
			}
			// statusfold validate prints "error: FILE: " and offline.Message: all of what
			// kubectl prints for an Invalid error, the end of it otherwise.
			msg := offline.Message(o.Err)
			if apierrors.IsInvalid(o.Err) {
				if msg != printed {
					t.Errorf("offline.Message:\n%s\nkubectl's printer:\n%s", msg, printed)
				}
			} else if !strings.HasSuffix(printed, msg) {
				t.Errorf("offline.Message %q is not the end of kubectl's message:\n%s", msg, printed)
			}
			t.Logf("%s", online)
		})
	}
}

// offlineAdmission is statusfold validate's admission, with a checker without lookups.
func offlineAdmission(t *testing.T) (*offline.Admission, *check.Checker) {
	t.Helper()
	adm, err := offline.NewAdmission()
	if err != nil {
		t.Fatal(err)
	}
	checker, err := check.New(check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return adm, checker
}

// sameMessage compares two kubectl messages. The causes of an Invalid error from the CRD schema
// come in no fixed order — the apiserver's OpenAPI validator walks an object's properties in Go
// map order, so two identical requests can list them differently — so the lines after the
// first are compared as a multiset.
func sameMessage(a, b string) bool {
	if a == b {
		return true
	}
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(la) != len(lb) || la[0] != lb[0] {
		return false
	}
	la, lb = slices.Clone(la[1:]), slices.Clone(lb[1:])
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}

// withoutWarnings drops kubectl's "Warning: ..." lines.
func withoutWarnings(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "Warning: ") {
			keep = append(keep, l)
		}
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// acceptedFiles hold objects that the apiserver admits: the samples and valid testdata.
var acceptedFiles = []string{
	"config/samples/10-statuscollectors.yaml",
	"config/samples/20-contentclassifier.yaml",
	"config/samples/40-bindingpolicies.yaml",
	"config/samples/50-aggregationpolicy.yaml",
	"cmd/statusfold/testdata/validate/good.yaml",
}

// acceptedObjects are valid objects whose stored form the schema's defaults or the mutating
// webhook change.
var acceptedObjects = []struct{ name, yaml string }{
	{"limit omitted", `
kind: StatusCollector
metadata: {name: no-limit}
spec:
  select: [{name: wec, def: inventory.name}]`},
	{"limit 0", `
kind: StatusCollector
metadata: {name: zero-limit}
spec:
  limit: 0
  combinedFields: [{name: count, type: COUNT}]`},
	{"nulls, which kubectl drops before it sends the object", `
kind: StatusCollector
metadata: {name: nulls, labels: null}
spec:
  filter: null
  limit: null
  select: [{name: wec, def: inventory.name}]`},
	{"nulls in preserved fields, which kubectl drops too", `
apiVersion: policy.statusfold.dev/v1alpha1
kind: AggregationPolicy
metadata: {name: nulls-kept-by-the-schema}
spec:
  target: {group: policy, kind: PodDisruptionBudget}
  rego: |
    package statusfold.user.poddisruptionbudget

    combine := {"currentHealthy": "sum"}
  examples:
  - name: one WEC
    object: {"metadata": {"generation": 1, "annotations": null}, "spec": {"x": null}}
    wecs:
    - name: wec1
      status: {"currentHealthy": 2, "gone": null}
    expectedStatus: {"currentHealthy": 2}`},
	{"finalizer names the apiserver warns about", `
kind: StatusCollector
metadata: {name: finalizers, finalizers: [cleanup, example.com.cleanup, example.com/cleanup, kubernetes]}
spec:
  select: [{name: wec, def: inventory.name}]`},
	{"empty lists", `
kind: StatusCollector
metadata: {name: empty-lists}
spec:
  groupBy: []
  select: [{name: wec, def: inventory.name}]
  combinedFields: []`},
}

// TestOfflineParityAccepted is TestOfflineParity's other half: every object that `kubectl apply`
// admits is admitted offline too, and stored the same — the spec that a server-side dry run
// returns (the schema's defaults, the mutating webhook) equals the offline object's.
func TestOfflineParityAccepted(t *testing.T) {
	framework.RequireIntegration(t)
	adm, checker := offlineAdmission(t)
	type acceptedCase struct {
		name string
		body []byte
	}
	var cases []acceptedCase
	for _, f := range acceptedFiles {
		data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), f))
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 1; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			body, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatalf("%s: document %d: %v", f, i, err)
			}
			if string(bytes.TrimSpace(body)) == "null" {
				continue
			}
			cases = append(cases, acceptedCase{fmt.Sprintf("%s#%d", f, i), body})
		}
	}
	for _, ao := range acceptedObjects {
		body, err := yaml.YAMLToJSON([]byte(yamlDoc(ao.yaml)))
		if err != nil {
			t.Fatalf("%s: %v", ao.name, err)
		}
		cases = append(cases, acceptedCase{ao.name, body})
	}

	e := startAdmission(t)
	ctx := context.Background()
	compared, warned := 0, 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, ours := adm.Admit(ctx, "STDIN", c.body)
			if !ours {
				return // another kind (a ConfigMap in good.yaml)
			}
			compared++
			kctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			stdout, stderr, err := e.cp.Kubectl(kctx, c.body, "apply", "--dry-run=server", "-o", "json", "-f", "-")
			if err != nil {
				t.Fatalf("kubectl apply: %v\n%s", err, stderr)
			}
			o.Check(ctx, checker)
			if o.Err != nil {
				t.Fatalf("offline: %s\nkubectl apply admitted it", offline.Message(o.Err))
			}
			online := &unstructured.Unstructured{}
			if err := online.UnmarshalJSON([]byte(stdout)); err != nil {
				t.Fatalf("kubectl's output: %v\n%s", err, stdout)
			}
			offlineObj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Typed)
			if err != nil {
				t.Fatal(err)
			}
			// Both through the Go type, so that only what the type holds is compared.
			typedOnline, err := e.cp.Scheme.New(o.GVK)
			if err != nil {
				t.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(online.Object, typedOnline); err != nil {
				t.Fatal(err)
			}
			onlineObj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typedOnline)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(onlineObj["spec"], offlineObj["spec"]); diff != "" {
				t.Errorf("spec differs (-kubectl apply +offline):\n%s", diff)
			}
			// The apiserver's own warnings (the webhooks' need lookups the offline checker
			// does not have).
			var onlineWarnings []string
			for _, l := range strings.Split(stderr, "\n") {
				if w, ok := strings.CutPrefix(l, "Warning: "); ok && strings.HasPrefix(w, "metadata.") {
					onlineWarnings = append(onlineWarnings, w)
				}
			}
			offlineWarnings := slices.DeleteFunc(slices.Clone(o.Warnings), func(w string) bool { return !strings.HasPrefix(w, "metadata.") })
			slices.Sort(onlineWarnings)
			slices.Sort(offlineWarnings)
			if !slices.Equal(onlineWarnings, offlineWarnings) {
				t.Errorf("apiserver warnings differ:\nkubectl apply: %q\noffline:       %q", onlineWarnings, offlineWarnings)
			}
			warned += len(onlineWarnings)
		})
	}
	if compared < len(acceptedObjects)+10 {
		t.Errorf("only %d objects of statusfold's kinds compared: the samples changed?", compared)
	}
	if warned == 0 {
		t.Error("no apiserver warning compared: the finalizer case no longer warns")
	}
}
