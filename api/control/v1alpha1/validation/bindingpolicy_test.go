package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

type policyOpt func(*controlv1alpha1.BindingPolicy)

func bindingPolicy(name string, opts ...policyOpt) *controlv1alpha1.BindingPolicy {
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(bp)
	}
	return bp
}

func clusterSelector(sel metav1.LabelSelector) policyOpt {
	return func(bp *controlv1alpha1.BindingPolicy) {
		bp.Spec.ClusterSelectors = append(bp.Spec.ClusterSelectors, sel)
	}
}

func clause(opts ...func(*controlv1alpha1.DownsyncPolicyClause)) policyOpt {
	return func(bp *controlv1alpha1.BindingPolicy) {
		var c controlv1alpha1.DownsyncPolicyClause
		for _, o := range opts {
			o(&c)
		}
		bp.Spec.Downsync = append(bp.Spec.Downsync, c)
	}
}

func apiGroup(g string) func(*controlv1alpha1.DownsyncPolicyClause) {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.APIGroup = ptr.To(g) }
}

func resources(r ...string) func(*controlv1alpha1.DownsyncPolicyClause) {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.Resources = r }
}

func namespaces(n ...string) func(*controlv1alpha1.DownsyncPolicyClause) {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.Namespaces = n }
}

func objectNames(n ...string) func(*controlv1alpha1.DownsyncPolicyClause) {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.ObjectNames = n }
}

func objectSelector(sel metav1.LabelSelector) func(*controlv1alpha1.DownsyncPolicyClause) {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.ObjectSelectors = append(c.ObjectSelectors, sel) }
}

func namespaceSelector(sel metav1.LabelSelector) func(*controlv1alpha1.DownsyncPolicyClause) {
	return func(c *controlv1alpha1.DownsyncPolicyClause) {
		c.NamespaceSelectors = append(c.NamespaceSelectors, sel)
	}
}

func collectors(n ...string) func(*controlv1alpha1.DownsyncPolicyClause) {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.StatusCollectors = n }
}

func wantMulti(c *controlv1alpha1.DownsyncPolicyClause) { c.WantMultiWECReportedState = true }

var (
	edge      = metav1.LabelSelector{MatchLabels: map[string]string{"location-group": "edge"}}
	downsync0 = field.NewPath("spec", "downsync").Index(0)
)

func TestValidateBindingPolicy(t *testing.T) {
	tests := []struct {
		name string
		bp   *controlv1alpha1.BindingPolicy
		want field.ErrorList
	}{
		{name: "seed example-binding-policy", bp: bindingPolicy("example-binding-policy", clusterSelector(edge),
			clause(objectSelector(metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "nginx"}}), collectors("count-wecs")))},
		{name: "seed nginx-singleton-bpolicy", bp: bindingPolicy("nginx-singleton-bpolicy", clusterSelector(edge),
			clause(apiGroup("apps"), resources("deployments"), namespaces("nginx-sn"), objectNames("nginx-singleton-deployment"),
				namespaceSelector(metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "nginx-sn"}}),
				collectors("count-wecs", "full-status")))},
		{name: "resources star alone is a test", bp: bindingPolicy("all", clusterSelector(edge), clause(resources("*"), wantMulti))},
		{name: "core group and empty list", bp: bindingPolicy("core", clause(apiGroup(""), resources()))},
		{name: "wildcards", bp: bindingPolicy("w", clause(namespaces("*"), objectNames("*")))},
		{name: "no policy spec at all", bp: bindingPolicy("empty")},
		{
			name: "clause without object test",
			bp:   bindingPolicy("p", clusterSelector(edge), clause(collectors("c"), wantMulti)),
			want: field.ErrorList{field.Required(downsync0, MsgNoObjectTest)},
		},
		{
			name: "second clause without object test",
			bp:   bindingPolicy("p", clause(resources("pods")), clause(wantMulti)),
			want: field.ErrorList{field.Required(field.NewPath("spec", "downsync").Index(1), MsgNoObjectTest)},
		},
		{
			name: "bad cluster selector operator",
			bp: bindingPolicy("p", clusterSelector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "region", Operator: "Contains", Values: []string{"eu"}}}}), clause(resources("*"))),
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "clusterSelectors").Index(0).Child("matchExpressions").Index(0).Child("operator"),
				metav1.LabelSelectorOperator("Contains"), "not a valid selector operator")},
		},
		{
			name: "In without values",
			bp: bindingPolicy("p", clause(objectSelector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpIn}}}))),
			want: field.ErrorList{field.Required(downsync0.Child("objectSelectors").Index(0).Child("matchExpressions").Index(0).Child("values"),
				"must be specified when `operator` is 'In' or 'NotIn'")},
		},
		{
			name: "bad label key in namespace selector",
			bp:   bindingPolicy("p", clause(namespaceSelector(metav1.LabelSelector{MatchLabels: map[string]string{"bad key": "x"}}))),
			want: field.ErrorList{field.Invalid(downsync0.Child("namespaceSelectors").Index(0).Child("matchLabels"), "bad key",
				"name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')").WithOrigin("format=k8s-label-key")},
		},
		{
			name: "bad api group, resource, namespace, name, collector",
			bp: bindingPolicy("p", clause(apiGroup("Apps"), resources("Deployments"), namespaces(""), objectNames("a/b"),
				collectors("", "Bad_Name"))),
			want: field.ErrorList{
				field.Invalid(downsync0.Child("apiGroup"), "Apps", "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
				field.Invalid(downsync0.Child("resources").Index(0), "Deployments", "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
				field.Invalid(downsync0.Child("namespaces").Index(0), "", MsgEmptyName),
				field.Invalid(downsync0.Child("objectNames").Index(0), "a/b", `may not contain '/'`),
				field.Invalid(downsync0.Child("statusCollectors").Index(0), "", MsgEmptyName),
				field.Invalid(downsync0.Child("statusCollectors").Index(1), "Bad_Name", "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
			},
		},
		{
			name: "empty name",
			bp:   bindingPolicy("", clause(resources("*"))),
			want: field.ErrorList{field.Required(field.NewPath("metadata", "name"), "")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateBindingPolicy(tt.bp)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBindingPolicyWarnings(t *testing.T) {
	tests := []struct {
		name string
		bp   *controlv1alpha1.BindingPolicy
		want []string
	}{
		{name: "clean", bp: bindingPolicy("p", clusterSelector(edge), clause(resources("*"), collectors("a", "b")))},
		{name: "no clusters, no objects", bp: bindingPolicy("p"), want: []string{
			"spec.clusterSelectors: empty, so the policy selects no cluster",
			"spec.downsync: empty, so the policy selects no object",
		}},
		{name: "duplicate collector", bp: bindingPolicy("p", clusterSelector(edge), clause(resources("*"), collectors("a", "b", "a"))), want: []string{
			`spec.downsync[0].statusCollectors[2]: duplicate collector "a" is applied once`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, BindingPolicyWarnings(tt.bp)); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExplicitResources(t *testing.T) {
	tests := []struct {
		name      string
		clause    controlv1alpha1.DownsyncPolicyClause
		wantGroup *string
		wantRes   []string
	}{
		{name: "apps deployments", clause: controlv1alpha1.DownsyncPolicyClause{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{
			APIGroup: ptr.To("apps"), Resources: []string{"deployments", "statefulsets"}}}, wantGroup: ptr.To("apps"), wantRes: []string{"deployments", "statefulsets"}},
		{name: "any group", clause: controlv1alpha1.DownsyncPolicyClause{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{
			Resources: []string{"jobs"}}}, wantRes: []string{"jobs"}},
		{name: "wildcard", clause: controlv1alpha1.DownsyncPolicyClause{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{
			APIGroup: ptr.To("apps"), Resources: []string{"deployments", "*"}}}, wantGroup: ptr.To("apps")},
		{name: "no resources", clause: controlv1alpha1.DownsyncPolicyClause{DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{
			ObjectNames: []string{"x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, r := ExplicitResources(&tt.clause)
			if diff := cmp.Diff(tt.wantGroup, g); diff != "" {
				t.Errorf("group (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRes, r); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
}
