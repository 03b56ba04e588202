package admission

import (
	"strings"
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
