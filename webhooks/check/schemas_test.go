package check

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
)

// TestCRDSchemas loads CRD manifests as `statusfold validate --schemas` does and checks that
// parts a CRD leaves open (a preserve-unknown-fields status) accept any path while declared
// parts are checked.
func TestCRDSchemas(t *testing.T) {
	s, err := LoadSchemas("../../config/crd/bases")
	if err != nil {
		t.Fatal(err)
	}
	gvk, err := s.KindFor(schema.GroupVersionResource{Group: "control.kubestellar.io", Version: "v1alpha1", Resource: "workstatuses"})
	if err != nil || gvk.Kind != "WorkStatus" {
		t.Fatalf("KindFor workstatuses: %v, %v", gvk, err)
	}
	c, err := New(Options{Mapper: s, Schemas: s, Collectors: collectorMap(
		collectorObj("open-status", sel("x", "returned.status.anything.at.all")),
		collectorObj("declared", sel("g", "obj.statusDetails.lastGenerationn")),
	)})
	if err != nil {
		t.Fatal(err)
	}
	_, warnings := c.ContentClassifier(cc("workstatuses.v1alpha1.control.kubestellar.io", nil,
		ptrs{{"status", "anything", "0"}, {"statusDetails", "lastGenerationn"}}))
	want := []string{`spec.dontPropagatePointers[1]: control.kubestellar.io/v1alpha1 WorkStatus has no field "lastGenerationn" at "/statusDetails", so this pointer matches nothing`}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("classifier warnings (-want +got):\n%s", diff)
	}
	_, warnings = c.BindingPolicy(context.Background(), policy("p",
		clause(group("control.kubestellar.io"), res("workstatuses"), uses("open-status", "declared"))))
	want = []string{`collector "declared": spec.select[0].def: no such field 'lastGenerationn' in control.kubestellar.io/v1alpha1 WorkStatus .statusDetails`}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("policy warnings (-want +got):\n%s", diff)
	}
}

// fakeOpenAPI serves OpenAPI v3 documents from files, with a hash per document that a test can
// change, like the apiserver's /openapi/v3 discovery.
type fakeOpenAPI struct {
	docs    map[string]string // discovery path -> file
	hash    map[string]int
	fetches int
	lists   int
}

type fakeGV struct {
	f    *fakeOpenAPI
	path string
	hash int // as of the Paths call, like the real client
}

func (g fakeGV) Schema(string) ([]byte, error) {
	g.f.fetches++
	return os.ReadFile(g.f.docs[g.path])
}

func (g fakeGV) ServerRelativeURL() string {
	return fmt.Sprintf("/openapi/v3/%s?hash=%d", g.path, g.hash)
}

func (f *fakeOpenAPI) Paths() (map[string]openapi.GroupVersion, error) {
	f.lists++
	out := map[string]openapi.GroupVersion{}
	for p := range f.docs {
		out[p] = fakeGV{f, p, f.hash[p]}
	}
	return out, nil
}

func TestDiscoverySchemas(t *testing.T) {
	f := &fakeOpenAPI{docs: map[string]string{"apis/apps/v1": "testdata/apps-v1.json"}, hash: map[string]int{"apis/apps/v1": 1}}
	d := NewDiscoverySchemas(f, time.Minute)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d.now = func() time.Time { return now }
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

	first, err := d.ResolveSchema(deploy)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := first.Properties["status"].Properties["availableReplicas"]; !ok {
		t.Fatal("resolved Deployment schema lacks status.availableReplicas")
	}
	again, _ := d.ResolveSchema(deploy)
	now = now.Add(2 * time.Minute)
	unchanged, _ := d.ResolveSchema(deploy)
	if again != first || unchanged != first || f.fetches != 1 {
		t.Errorf("unchanged document fetched %d times; same schema: %v %v", f.fetches, again == first, unchanged == first)
	}
	f.hash["apis/apps/v1"] = 2
	stale, _ := d.ResolveSchema(deploy) // within the recheck interval: not seen yet
	now = now.Add(2 * time.Minute)
	changed, _ := d.ResolveSchema(deploy)
	if stale != first || changed == first || f.fetches != 2 {
		t.Errorf("changed document: fetches %d, stale reused %v, new schema %v", f.fetches, stale == first, changed != first)
	}
	lists := f.lists
	if _, err := d.ResolveSchema(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}); err == nil {
		t.Error("schema of an unknown group version resolved")
	}
	f.docs["apis/batch/v1"], f.hash["apis/batch/v1"] = "testdata/batch-v1.json", 1
	if _, err := d.ResolveSchema(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}); err != nil {
		t.Errorf("a group version that appeared after a miss: %v", err)
	}
	if f.lists != lists+1 {
		t.Errorf("list of documents read %d times after a miss, want once", f.lists-lists)
	}
}

func TestResourceOfPath(t *testing.T) {
	tests := []struct {
		path       string
		resource   string
		namespaced bool
		ok         bool
	}{
		{"/apis/apps/v1/namespaces/{namespace}/deployments", "deployments", true, true},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "deployments", true, true},
		{"/apis/apps/v1/deployments", "deployments", false, true},
		{"/api/v1/nodes/{name}", "nodes", false, true},
		{"/api/v1/namespaces", "namespaces", false, true},
		{"/api/v1/namespaces/{name}", "namespaces", false, true},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status", "", false, false},
		{"/apis/apps/v1/watch/namespaces/{namespace}/deployments", "", false, false},
		{"/apis/apps/v1/", "", false, false},
		{"/apis/apps", "", false, false},
	}
	for _, tt := range tests {
		r, ns, ok := resourceOfPath(tt.path)
		if r != tt.resource || ns != tt.namespaced || ok != tt.ok {
			t.Errorf("resourceOfPath(%q) = %q, %v, %v; want %q, %v, %v", tt.path, r, ns, ok, tt.resource, tt.namespaced, tt.ok)
		}
	}
}
