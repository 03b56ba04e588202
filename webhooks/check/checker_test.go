package check

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/api/control/v1alpha1/validation"
	"github.com/statusfold/statusfold/policy/classifier"
)

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

func TestBindingPolicy(t *testing.T) {
	d0 := field.NewPath("spec", "downsync").Index(0)

	tests := []struct {
		name         string
		bp           *controlv1alpha1.BindingPolicy
		wantErrs     field.ErrorList
		wantWarnings []string
	}{
		{name: "typed and clean", bp: policy("p", clause(group("apps"), res("deployments"), uses("good")))},
		{name: "admission.md example", bp: policy("p", clause(group("apps"), res("deployments"), uses("ready-count"))), wantWarnings: []string{
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
	c := newChecker(t, bindingPolicyTestCollectors())
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

// bindingPolicyTestCollectors serves TestBindingPolicy's collectors: clean ones, ones with
// misspelt or mistyped fields for the typed check, and an invalid one.
func bindingPolicyTestCollectors() CollectorGetter {
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
	return collectorMap(readyCount, good, specTypo, objStatus, inComprehension, listSum, jobs, invalid, dynIndex)
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
