package admission

import (
	"bufio"
	"bytes"
	"context"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks/check"
	"github.com/statusfold/statusfold/webhooks/offline"
)

// TestOfflineParityAccepted is TestOfflineParity's other half: every object that `kubectl apply`
// admits is admitted offline too, and stored the same — the spec that a server-side dry run
// returns (the schema's defaults, the mutating webhook) equals the offline object's.
func TestOfflineParityAccepted(t *testing.T) {
	framework.RequireIntegration(t)
	adm, checker := offlineAdmission(t)
	cases := acceptedCases(t)
	e := startAdmission(t)
	compared, warned := 0, 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ours, warnings := checkAcceptedParity(t, e, adm, checker, c)
			if ours {
				compared++
			}
			warned += warnings
		})
	}
	if compared < len(acceptedObjects)+10 {
		t.Errorf("only %d objects of statusfold's kinds compared: the samples changed?", compared)
	}
	if warned == 0 {
		t.Error("no apiserver warning compared: the finalizer case no longer warns")
	}
}

// acceptedCases are TestOfflineParityAccepted's objects: every document of acceptedFiles, and
// acceptedObjects.
func acceptedCases(t *testing.T) []parityCase {
	t.Helper()
	var cases []parityCase
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
			cases = append(cases, parityCase{fmt.Sprintf("%s#%d", f, i), body})
		}
	}
	for _, ao := range acceptedObjects {
		body, err := yaml.YAMLToJSON([]byte(yamlDoc(ao.yaml)))
		if err != nil {
			t.Fatalf("%s: %v", ao.name, err)
		}
		cases = append(cases, parityCase{ao.name, body})
	}
	return cases
}

// checkAcceptedParity dry-runs c with `kubectl apply --dry-run=server` and admits it offline:
// both must admit it, with the same stored spec and the same apiserver warnings. It reports
// whether c is of statusfold's kinds (else nothing is compared) and how many warnings it compared.
func checkAcceptedParity(t *testing.T, e *env, adm *offline.Admission, checker *check.Checker, c parityCase) (ours bool, warnings int) {
	ctx := context.Background()
	o, ours := adm.Admit(ctx, "STDIN", c.body)
	if !ours {
		return false, 0 // another kind (a ConfigMap in good.yaml)
	}
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
	return true, len(onlineWarnings)
}
