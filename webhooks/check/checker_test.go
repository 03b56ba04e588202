package check

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/openapi"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/api/control/v1alpha1/validation"
	"github.com/statusfold/statusfold/policy/classifier"
)

// Builders, in the style of cert-manager's test/unit/gen.

type scOpt func(*controlv1alpha1.StatusCollector)

func collectorObj(name string, opts ...scOpt) *controlv1alpha1.StatusCollector {
	sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(sc)
	}
	return sc
}

func filter(expr string) scOpt {
	return func(sc *controlv1alpha1.StatusCollector) { e := controlv1alpha1.Expression(expr); sc.Spec.Filter = &e }
}

func sel(name, expr string) scOpt {
	return func(sc *controlv1alpha1.StatusCollector) {
		sc.Spec.Select = append(sc.Spec.Select, controlv1alpha1.NamedExpression{Name: name, Def: controlv1alpha1.Expression(expr)})
	}
}

func agg(name string, typ controlv1alpha1.AggregatorType, subject string) scOpt {
	return func(sc *controlv1alpha1.StatusCollector) {
		na := controlv1alpha1.NamedAggregator{Name: name, Type: typ}
		if subject != "" {
			e := controlv1alpha1.Expression(subject)
			na.Subject = &e
		}
		sc.Spec.CombinedFields = append(sc.Spec.CombinedFields, na)
	}
}

type clauseOpt func(*controlv1alpha1.DownsyncPolicyClause)

func policy(name string, clauses ...controlv1alpha1.DownsyncPolicyClause) *controlv1alpha1.BindingPolicy {
	return &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: controlv1alpha1.BindingPolicySpec{
		ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"location-group": "edge"}}},
		Downsync:         clauses,
	}}
}

func clause(opts ...clauseOpt) controlv1alpha1.DownsyncPolicyClause {
	var c controlv1alpha1.DownsyncPolicyClause
	for _, o := range opts {
		o(&c)
	}
	return c
}

func group(g string) clauseOpt {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.APIGroup = ptr.To(g) }
}
func res(r ...string) clauseOpt {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.Resources = r }
}
func uses(n ...string) clauseOpt {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.StatusCollectors = n }
}

// collectorMap is a CollectorGetter over a fixed set.
func collectorMap(scs ...*controlv1alpha1.StatusCollector) CollectorGetter {
	m := map[string]*controlv1alpha1.StatusCollector{}
	for _, sc := range scs {
		m[sc.Name] = sc
	}
	return CollectorGetterFunc(func(_ context.Context, name string) (*controlv1alpha1.StatusCollector, error) {
		if sc, ok := m[name]; ok {
			return sc, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "control.kubestellar.io", Resource: "statuscollectors"}, name)
	})
}

var (
	schemasOnce sync.Once
	schemas     *OfflineSchemas
	schemasErr  error
)

func testSchemas(t testing.TB) *OfflineSchemas {
	t.Helper()
	schemasOnce.Do(func() { schemas, schemasErr = LoadSchemas("testdata") })
	if schemasErr != nil {
		t.Fatal(schemasErr)
	}
	return schemas
}

func newChecker(t testing.TB, getter CollectorGetter) *Checker {
	t.Helper()
	s := testSchemas(t)
	c, err := New(Options{Collectors: getter, Mapper: s, Schemas: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStatusCollector(t *testing.T) {
	c := newChecker(t, nil)
	errs, warnings := c.StatusCollector(context.Background(), collectorObj("bad", sel("a", "inventory.name"), agg("n", controlv1alpha1.AggregatorTypeSum, "")))
	want := field.ErrorList{
		field.Forbidden(field.NewPath("spec", "select"), "select and combinedFields are mutually exclusive"),
		field.Required(field.NewPath("spec", "combinedFields").Index(0).Child("subject"), "SUM needs a subject"),
	}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	errs, warnings = c.StatusCollector(context.Background(), collectorObj("never", filter("false"), sel("wec", "inventory.name")))
	if len(errs) != 0 || len(warnings) != 1 {
		t.Errorf("constant false filter: errs %v, warnings %q", errs, warnings)
	}
}

// TestStatusCollectorTypedByPolicies: a collector is type-checked against the resources of the
// policies that apply it, once per kind.
func TestStatusCollectorTypedByPolicies(t *testing.T) {
	s := testSchemas(t)
	policies := []controlv1alpha1.BindingPolicy{
		*policy("deploys", clause(group("apps"), res("deployments"), uses("ready-count", "other"))),
		*policy("deploys-again", clause(group("apps"), res("deployments"), uses("ready-count"))),
		*policy("everything", clause(res("*"), uses("ready-count"))),
		*policy("jobs", clause(group("batch"), res("jobs"), uses("other"))),
	}
	c, err := New(Options{Mapper: s, Schemas: s, Policies: PolicyListerFunc(func(context.Context) ([]controlv1alpha1.BindingPolicy, error) {
		return policies, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	readyCount := collectorObj("ready-count", agg("ready", controlv1alpha1.AggregatorTypeSum, "returned.status.avaliableReplicas"))
	errs, warnings := c.StatusCollector(context.Background(), readyCount)
	want := []string{`collector "ready-count": spec.combinedFields[0].subject: no such field 'avaliableReplicas' in apps/v1 Deployment .status (applied by BindingPolicy "deploys")`}
	if len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	// Invalid collectors get their errors only.
	errs, warnings = c.StatusCollector(context.Background(), collectorObj("ready-count", sel("a", "inventory.nmae")))
	if len(errs) != 1 || len(warnings) != 0 {
		t.Errorf("invalid collector: errors %v, warnings %q", errs, warnings)
	}
}

func TestContentClassifier(t *testing.T) {
	c := newChecker(t, nil)
	tests := []struct {
		name         string
		cc           *controlv1alpha1.ContentClassifier
		wantErrs     field.ErrorList
		wantWarnings []string
	}{
		{name: "seed", cc: cc("jobs.v1.batch", nil, ptrs{{"status", "ready"}})},
		{name: "labels map and list element", cc: cc("deployments.v1.apps", ptrs{{"metadata", "labels", "team"}},
			ptrs{{"spec", "template", "spec", "containers", "0", "image"}, {"status", "conditions", "-"}})},
		{name: "not served", cc: cc("widgets.v1.example.com", nil, ptrs{{"status", "x"}}), wantWarnings: []string{
			`metadata.name: resource "widgets" of example.com/v1 is not served; the classifier takes effect when it is`,
		}},
		{name: "misspelt status field", cc: cc("jobs.v1.batch", nil, ptrs{{"status", "ready"}, {"status", "readyy"}}), wantWarnings: []string{
			`spec.dontPropagatePointers[1]: batch/v1 Job has no field "readyy" at "/status", so this pointer matches nothing`,
		}},
		{name: "field of a list", cc: cc("deployments.v1.apps", ptrs{{"spec", "template", "spec", "containers", "image"}}, nil), wantWarnings: []string{
			`spec.desiredStatePointers[0]: apps/v1 Deployment has no field "image" at "/spec/template/spec/containers", so this pointer matches nothing`,
		}},
		{name: "below a scalar", cc: cc("deployments.v1.apps", nil, ptrs{{"status", "replicas", "x"}}), wantWarnings: []string{
			`spec.dontPropagatePointers[0]: apps/v1 Deployment has no field "x" at "/status/replicas", so this pointer matches nothing`,
		}},
		{name: "errors and warnings together", cc: cc("jobs.v1.batch", ptrs{{"status", "x"}}, ptrs{{"status", "nope"}}),
			wantErrs: field.ErrorList{field.Invalid(field.NewPath("spec", "desiredStatePointers").Index(0), []string{"status", "x"}, classifier.MsgStatusIsReported)},
			wantWarnings: []string{
				`spec.desiredStatePointers[0]: batch/v1 Job has no field "x" at "/status", so this pointer matches nothing`,
				`spec.dontPropagatePointers[0]: batch/v1 Job has no field "nope" at "/status", so this pointer matches nothing`,
			}},
		{name: "bad name: no lookups", cc: cc("jobs", nil, ptrs{{"status", "ready"}}),
			wantErrs: field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), "jobs", classifier.MsgNameFormat)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, warnings := c.ContentClassifier(tt.cc)
			if diff := cmp.Diff(tt.wantErrs, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

type ptrs []controlv1alpha1.JSONPointer

func cc(name string, desired, dont ptrs) *controlv1alpha1.ContentClassifier {
	return &controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: controlv1alpha1.ContentClassifierSpec{DesiredStatePointers: desired, DontPropagatePointers: dont}}
}

func TestBindingPolicy(t *testing.T) {
	readyCount := collectorObj("ready-count", agg("ready", controlv1alpha1.AggregatorTypeSum, "returned.status.avaliableReplicas"))
	good := collectorObj("good", filter("obj.spec.replicas != returned.status.availableReplicas"),
		sel("wec", "inventory.name"), sel("ready", "returned.status.readyReplicas"),
		sel("progressing", `returned.status.conditions.exists(c, c.type == "Progressing" && c.status == "True")`))
	specTypo := collectorObj("spec-typo", sel("r", "obj.spec.replicaz"), sel("img", "obj.spec.template.spec.containers[0].imagee"))
	objStatus := collectorObj("obj-status", sel("r", "obj.status.readyReplicas"))
	inComprehension := collectorObj("in-comprehension", sel("r", `returned.status.conditions.exists(c, c.typo == "x")`))
	listSum := collectorObj("list-sum", agg("s", controlv1alpha1.AggregatorTypeSum, "returned.status.conditions"))
	jobs := collectorObj("jobs", agg("ok", controlv1alpha1.AggregatorTypeSum, "returned.status.succeeded"), agg("bad", controlv1alpha1.AggregatorTypeMax, "returned.status.succeded"))
	invalid := collectorObj("invalid", sel("a", "inventory.nmae"))
	dynIndex := collectorObj("dyn-index", sel("t", "returned.status.conditions[size(returned.status.conditions) - 1].typ"))
	getter := collectorMap(readyCount, good, specTypo, objStatus, inComprehension, listSum, jobs, invalid, dynIndex)
	d0 := field.NewPath("spec", "downsync").Index(0)

	tests := []struct {
		name         string
		bp           *controlv1alpha1.BindingPolicy
		wantErrs     field.ErrorList
		wantWarnings []string
	}{
		{name: "typed and clean", bp: policy("p", clause(group("apps"), res("deployments"), uses("good")))},
		{name: "issue example", bp: policy("p", clause(group("apps"), res("deployments"), uses("ready-count"))), wantWarnings: []string{
			`collector "ready-count": spec.combinedFields[0].subject: no such field 'avaliableReplicas' in apps/v1 Deployment .status`,
		}},
		{name: "misspelt obj fields", bp: policy("p", clause(group("apps"), res("deployments"), uses("spec-typo"))), wantWarnings: []string{
			`collector "spec-typo": spec.select[0].def: no such field 'replicaz' in apps/v1 Deployment .spec`,
			`collector "spec-typo": spec.select[1].def: no such field 'imagee' in apps/v1 Deployment .spec.template.spec.containers[0]`,
		}},
		{name: "obj has no status", bp: policy("p", clause(group("apps"), res("deployments"), uses("obj-status"))), wantWarnings: []string{
			`collector "obj-status": spec.select[0].def: no such field 'status' in apps/v1 Deployment as obj (obj has no .status: use returned.status)`,
		}},
		{name: "computed index", bp: policy("p", clause(group("apps"), res("deployments"), uses("dyn-index"))), wantWarnings: []string{
			`collector "dyn-index": spec.select[0].def: no such field 'typ' in apps/v1 Deployment .status.conditions[…]`,
		}},
		{name: "comprehension variable", bp: policy("p", clause(group("apps"), res("deployments"), uses("in-comprehension"))), wantWarnings: []string{
			`collector "in-comprehension": spec.select[0].def: undefined field 'typo' (with obj and returned.status typed as apps/v1 Deployment)`,
		}},
		{name: "typed subject is a list", bp: policy("p", clause(group("apps"), res("deployments"), uses("list-sum"))), wantWarnings: []string{
			`collector "list-sum": spec.combinedFields[0].subject: SUM subject must evaluate to int, uint, double, string or dyn, but its type is list(statusfold.ReturnedStatus.conditions.@idx) (with obj and returned.status typed as apps/v1 Deployment)`,
		}},
		{name: "any group, two resources", bp: policy("p", clause(res("jobs", "deployments"), uses("jobs"))), wantWarnings: []string{
			`collector "jobs": spec.combinedFields[0].subject: no such field 'succeeded' in apps/v1 Deployment .status`,
			`collector "jobs": spec.combinedFields[1].subject: no such field 'succeded' in apps/v1 Deployment .status`,
			`collector "jobs": spec.combinedFields[1].subject: no such field 'succeded' in batch/v1 Job .status`,
		}},
		{name: "wildcard resources: no typed check", bp: policy("p", clause(group("apps"), res("*"), uses("ready-count")))},
		{name: "no resources: no typed check", bp: policy("p", clause(group("apps"), uses("ready-count")))},
		{name: "missing and invalid collectors", bp: policy("p", clause(group("apps"), res("deployments"), uses("nope", "invalid", "good"))), wantWarnings: []string{
			`spec.downsync[0].statusCollectors[0]: StatusCollector "nope" not found; its result appears once it exists`,
			`spec.downsync[0].statusCollectors[1]: StatusCollector "invalid" is invalid and is skipped: spec.select[0].def: Invalid value: "inventory.nmae": compilation failed: ERROR: <input>:1:10: undefined field 'nmae'
 | inventory.nmae
 | .........^`,
		}},
		{name: "resource not served", bp: policy("p", clause(group("apps"), res("deploymentz"), uses("good")), clause(group(""), res("deployments"), uses("good"))), wantWarnings: []string{
			`spec.downsync[0].resources[0]: resource "deploymentz" is not served in API group "apps"`,
			`spec.downsync[1].resources[0]: resource "deployments" is not served in API group ""`,
		}},
		{name: "shape error and warning", bp: policy("p", clause(uses("good"))), wantErrs: field.ErrorList{field.Required(d0, validation.MsgNoObjectTest)}},
		{name: "same collector in two clauses is checked once", bp: policy("p",
			clause(group("apps"), res("deployments"), uses("ready-count")), clause(group("apps"), res("deployments", "statefulsets"), uses("ready-count"))), wantWarnings: []string{
			`collector "ready-count": spec.combinedFields[0].subject: no such field 'avaliableReplicas' in apps/v1 Deployment .status`,
			`collector "ready-count": spec.combinedFields[0].subject: no such field 'avaliableReplicas' in apps/v1 StatefulSet .status`,
		}},
	}
	c := newChecker(t, getter)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, warnings := c.BindingPolicy(context.Background(), tt.bp)
			if diff := cmp.Diff(tt.wantErrs, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBindingPolicyUnknownCollector(t *testing.T) {
	c := newChecker(t, CollectorGetterFunc(func(context.Context, string) (*controlv1alpha1.StatusCollector, error) {
		return nil, fmt.Errorf("offline: %w", ErrUnknown)
	}))
	_, warnings := c.BindingPolicy(context.Background(), policy("p", clause(group("apps"), res("deployments"), uses("x"))))
	if len(warnings) != 0 {
		t.Errorf("unknown collectors must not warn: %q", warnings)
	}
}

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
