package admission

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
