package admission

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/test/hostile"
	"github.com/statusfold/statusfold/webhooks/check"
	"github.com/statusfold/statusfold/webhooks/offline"
	"github.com/statusfold/statusfold/webhooks/offline/kubectltest"
)

// TestOfflineParity checks that `statusfold validate` prints, for every object that the apiserver
// rejects, exactly what `kubectl apply` prints against a real apiserver with statusfold's CRDs
// and webhooks: the schema-level mistakes above, every bad object of TestAdmission (most get
// past the schema to the webhook), and every object of the hostile corpus (test/hostile) that
// the schema rejects.
func TestOfflineParity(t *testing.T) {
	framework.RequireIntegration(t)
	adm, checker := offlineAdmission(t)
	cases := rejectedCases(t, adm)
	e := startAdmission(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkRejectedParity(t, e, adm, checker, c) })
	}
}

// parityCase is an object to apply: its name and its body, JSON, as kubectl sends it.
type parityCase struct {
	name string
	body []byte
}

// rejectedCases are TestOfflineParity's objects: schemaObjects, two documents kubectl cannot
// decode, badObjects and the objects of the hostile corpus that the schema rejects (offline).
func rejectedCases(t *testing.T, adm *offline.Admission) []parityCase {
	t.Helper()
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
	hostileCases := hostileRejected(t, adm)
	if len(hostileCases) == 0 {
		t.Error("no object of the hostile corpus is rejected by the schema: the corpus changed, or the schema is not applied")
	}
	cases = append(cases, hostileCases...)
	t.Logf("%d cases, %d of them from the hostile corpus", len(cases), len(hostileCases))
	return cases
}

// hostileRejected are the objects of the hostile corpus (of statusfold's kinds) that the schema
// rejects offline.
func hostileRejected(t *testing.T, adm *offline.Admission) []parityCase {
	t.Helper()
	corpus, err := hostile.LoadCorpus(filepath.Join(framework.RepoRoot(), "test", "hostile", "testdata"), filepath.Join(t.TempDir(), "canary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []parityCase
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
		if o, ok := adm.Admit(context.Background(), "STDIN", body); !ok || o.Err == nil {
			continue // the schema accepts it: the hostile test checks what the webhook says
		}
		cases = append(cases, parityCase{"hostile: " + c.Name, body})
	}
	return cases
}

// checkRejectedParity applies c with kubectl, which must fail, and checks that the offline
// admission rejects it with the same message.
func checkRejectedParity(t *testing.T, e *env, adm *offline.Admission, checker *check.Checker, c parityCase) {
	ctx := context.Background()
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
