package aggregation

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// The cases of TestReturned, in groups. js parses their statuses, hence the *testing.T.

// returnedCase is one case of TestReturned: the WDS object, the WECs' reports, and the status
// Returned computes.
type returnedCase struct {
	name string
	gk   schema.GroupKind
	obj  string
	wecs []WEC
	want string // JSON; "null" for nothing
}

// deploymentObj is the WDS Deployment of the Deployment cases, at generation 3.
const deploymentObj = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","generation":3},"spec":{"replicas":3}}`

// returnedCopyCases: no WEC or none reported (nothing to write), and one WEC (a copy, with the
// observedGeneration rule of docs/rules.md "Status return").
func returnedCopyCases(t *testing.T) []returnedCase {
	return []returnedCase{{
		name: "no WEC: nothing",
		gk:   gkDeployment, obj: deploymentObj,
		want: "null",
	}, {
		name: "no WEC has reported: nothing",
		gk:   gkDeployment, obj: deploymentObj,
		wecs: []WEC{{Name: "a", Details: applied(3)}, {Name: "b"}},
		want: "null",
	}, {
		name: "one current WEC: a copy with the WDS generation",
		gk:   gkDeployment, obj: deploymentObj,
		wecs: []WEC{{Name: "a", Details: wecGen(applied(3), 7), Status: js(t, `{"observedGeneration":7,"replicas":3,"custom":{"x":"y"}}`)}},
		want: `{"observedGeneration":3,"replicas":3,"custom":{"x":"y"}}`,
	}, {
		name: "one WEC whose status has not observed its copy's generation: one below",
		gk:   gkDeployment, obj: deploymentObj,
		wecs: []WEC{{Name: "a", Details: wecGen(applied(3), 7), Status: js(t, `{"observedGeneration":6,"replicas":3}`)}},
		want: `{"observedGeneration":2,"replicas":3}`,
	}, {
		name: "one WEC without statusDetails: not known current",
		gk:   gkDeployment, obj: deploymentObj,
		wecs: []WEC{{Name: "a", Status: js(t, `{"observedGeneration":9}`)}},
		want: `{"observedGeneration":2}`,
	}, {
		name: "one WEC that has not applied the generation",
		gk:   gkDeployment, obj: deploymentObj,
		wecs: []WEC{{Name: "a", Details: &controlv1alpha1.StatusDetails{LastGeneration: 3}, Status: js(t, `{"observedGeneration":1}`)}},
		want: `{"observedGeneration":2}`,
	}}
}

// returnedDeploymentCases: a Deployment over several WECs.
func returnedDeploymentCases(t *testing.T) []returnedCase {
	return []returnedCase{{
		name: "deployment over three WECs, one lagging",
		gk:   gkDeployment, obj: deploymentObj,
		wecs: []WEC{
			{Name: "a", Details: applied(3), Status: js(t, `{"observedGeneration":3,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,
				"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","lastTransitionTime":"2025-11-01T10:00:00Z"},
				              {"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","lastTransitionTime":"2025-11-01T10:00:00Z"}]}`)},
			{Name: "b", Details: applied(3), Status: js(t, `{"observedGeneration":3,"replicas":4,"updatedReplicas":1,"readyReplicas":3,"availableReplicas":3,"unavailableReplicas":1,
				"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","lastTransitionTime":"2025-11-01T09:00:00Z"},
				              {"type":"Progressing","status":"True","reason":"ReplicaSetUpdated","lastTransitionTime":"2025-11-01T11:00:00Z"}]}`)},
			{Name: "c", Details: applied(2), Status: js(t, `{"observedGeneration":2,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3}`)},
		},
		want: `{"observedGeneration":2,"replicas":4,"updatedReplicas":1,"readyReplicas":3,"availableReplicas":3,"unavailableReplicas":1,
			"conditions":[{"type":"Available","status":"Unknown","reason":"Incomplete","message":"not every WEC reports this condition","lastTransitionTime":"2025-11-01T10:00:00Z"},
			              {"type":"Progressing","status":"Unknown","reason":"Incomplete","message":"not every WEC reports this condition","lastTransitionTime":"2025-11-01T11:00:00Z"}]}`,
	}, {
		name: "a missing count reads as 0 (Argo CD's reading)",
		gk:   gkDeployment, obj: deploymentObj,
		wecs: []WEC{
			{Name: "a", Details: applied(3), Status: js(t, `{"observedGeneration":3,"replicas":3,"updatedReplicas":3}`)},
			{Name: "b", Details: applied(3), Status: js(t, `{"observedGeneration":3,"replicas":2}`)},
		},
		want: `{"observedGeneration":3,"replicas":3,"updatedReplicas":0}`,
	}, {
		name: "ProgressDeadlineExceeded survives: reason from the newest entry that agrees",
		gk:   gkDeployment, obj: deploymentObj,
		wecs: []WEC{
			{Name: "a", Details: applied(3), Status: js(t, `{"observedGeneration":3,"conditions":[{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","lastTransitionTime":"2025-11-02T00:00:00Z"}]}`)},
			{Name: "b", Details: applied(3), Status: js(t, `{"observedGeneration":3,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded","message":"too slow","lastTransitionTime":"2025-11-01T00:00:00Z"}]}`)},
		},
		want: `{"observedGeneration":3,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded","message":"too slow","lastTransitionTime":"2025-11-02T00:00:00Z"}]}`,
	}}
}

// returnedGenericCases: a kind without a module of its own, under the generic rules.
func returnedGenericCases(t *testing.T) []returnedCase {
	return []returnedCase{{
		name: "generic: numbers min, bools and, strings agree, shapes must match",
		gk:   gkWidget, obj: `{"metadata":{"generation":1}}`,
		wecs: []WEC{
			{Name: "a", Details: applied(1), Status: js(t, `{"n":3,"f":2.5,"ok":true,"ready":true,"phase":"Up","zone":"x","m":{"a":1,"b":"s"},"l":[1,2],"l2":[1],"mixed":1}`)},
			{Name: "b", Details: applied(1), Status: js(t, `{"n":2,"f":4,"ok":false,"ready":true,"phase":"Up","zone":"y","m":{"a":0,"b":"s"},"l":[3,0],"l2":[1,2],"mixed":"1"}`)},
			{Name: "c", Details: applied(1)},
		},
		want: `{"n":2,"f":2.5,"ok":false,"ready":true,"phase":"Up","m":{"a":0,"b":"s"},"l":[1,0]}`,
	}, {
		name: "generic conditions: three-valued, negative types any-True, missing counts Unknown",
		gk:   gkWidget, obj: `{"metadata":{"generation":1}}`,
		wecs: []WEC{
			{Name: "a", Details: applied(1), Status: js(t, `{"conditions":[
				{"type":"Ready","status":"True","reason":"A","lastTransitionTime":"2025-11-01T00:00:00Z"},
				{"type":"Degraded","status":"False","reason":"Fine","lastTransitionTime":"2025-11-01T00:00:00Z"},
				{"type":"Synced","status":"True","reason":"S","lastTransitionTime":"2025-11-01T00:00:00Z"}]}`)},
			{Name: "b", Details: applied(1), Status: js(t, `{"conditions":[
				{"type":"Ready","status":"True","reason":"B","lastTransitionTime":"2025-11-03T00:00:00Z"},
				{"type":"Degraded","status":"True","reason":"Broken","lastTransitionTime":"2025-11-02T00:00:00Z"}]}`)},
		},
		want: `{"conditions":[
			{"type":"Ready","status":"True","reason":"B","lastTransitionTime":"2025-11-03T00:00:00Z"},
			{"type":"Degraded","status":"True","reason":"Broken","lastTransitionTime":"2025-11-02T00:00:00Z"},
			{"type":"Synced","status":"Unknown","reason":"Incomplete","message":"not every WEC reports this condition","lastTransitionTime":"2025-11-01T00:00:00Z"}]}`,
	}}
}

// returnedWorkloadCases: DaemonSet, StatefulSet and Job over several WECs.
func returnedWorkloadCases(t *testing.T) []returnedCase {
	return []returnedCase{{
		name: "daemonset: targets summed, counts clamped to each WEC's target",
		gk:   schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, obj: `{"metadata":{"generation":1}}`,
		wecs: []WEC{
			{Name: "a", Details: applied(1), Status: js(t, `{"observedGeneration":1,"desiredNumberScheduled":3,"updatedNumberScheduled":5,"numberAvailable":3}`)},
			{Name: "b", Details: applied(1), Status: js(t, `{"observedGeneration":1,"desiredNumberScheduled":2,"updatedNumberScheduled":1,"numberAvailable":2}`)},
		},
		want: `{"observedGeneration":1,"desiredNumberScheduled":5,"updatedNumberScheduled":4,"numberAvailable":5}`,
	}, {
		name: "statefulset: an unfinished WEC's revision pair",
		gk:   schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, obj: `{"metadata":{"generation":1}}`,
		wecs: []WEC{
			{Name: "a", Details: applied(1), Status: js(t, `{"observedGeneration":1,"currentRevision":"web-1","updateRevision":"web-1"}`)},
			{Name: "b", Details: applied(1), Status: js(t, `{"observedGeneration":1,"currentRevision":"web-2","updateRevision":"web-3"}`)},
		},
		want: `{"observedGeneration":1,"currentRevision":"web-2","updateRevision":"web-3"}`,
	}, {
		name: "statefulset: all finished, one revision",
		gk:   schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, obj: `{"metadata":{"generation":1}}`,
		wecs: []WEC{
			{Name: "a", Details: applied(1), Status: js(t, `{"observedGeneration":1,"currentRevision":"web-1","updateRevision":"web-1"}`)},
			{Name: "b", Details: applied(1), Status: js(t, `{"observedGeneration":1,"currentRevision":"web-2","updateRevision":"web-2"}`)},
		},
		want: `{"observedGeneration":1,"currentRevision":"web-1","updateRevision":"web-1"}`,
	}, {
		name: "job: Complete only when all completed, Failed when any failed",
		gk:   schema.GroupKind{Group: "batch", Kind: "Job"}, obj: `{}`,
		wecs: []WEC{
			{Name: "a", Status: js(t, `{"succeeded":1,"conditions":[{"type":"Complete","status":"True","reason":"Done","lastTransitionTime":"2025-11-01T00:00:00Z"}]}`)},
			{Name: "b", Status: js(t, `{"failed":2,"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","lastTransitionTime":"2025-11-02T00:00:00Z"}]}`)},
		},
		// The apiserver requires FailureTarget=True with Failed=True and a startTime on a finished
		// Job: both are filled in from the Failed entry (no WEC reported them).
		want: `{"succeeded":0,"failed":2,"startTime":"2025-11-02T00:00:00Z","conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","lastTransitionTime":"2025-11-02T00:00:00Z"},{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded","lastTransitionTime":"2025-11-02T00:00:00Z"}]}`,
	}}
}

// returnedOtherKindCases: Service, PersistentVolumeClaim and Pod over several WECs.
func returnedOtherKindCases(t *testing.T) []returnedCase {
	return []returnedCase{{
		name: "service: ingress union only when every WEC has one",
		gk:   schema.GroupKind{Kind: "Service"}, obj: `{}`,
		wecs: []WEC{
			{Name: "a", Status: js(t, `{"loadBalancer":{"ingress":[{"ip":"1.1.1.1"}]}}`)},
			{Name: "b", Status: js(t, `{"loadBalancer":{"ingress":[{"ip":"2.2.2.2"},{"ip":"1.1.1.1"}]}}`)},
		},
		want: `{"loadBalancer":{"ingress":[{"ip":"1.1.1.1"},{"ip":"2.2.2.2"}]}}`,
	}, {
		name: "service: one WEC without ingress empties the list",
		gk:   schema.GroupKind{Kind: "Service"}, obj: `{}`,
		wecs: []WEC{
			{Name: "a", Status: js(t, `{"loadBalancer":{"ingress":[{"ip":"1.1.1.1"}]}}`)},
			{Name: "b", Status: js(t, `{"loadBalancer":{}}`)},
		},
		want: `{"loadBalancer":{}}`,
	}, {
		name: "pvc: worst phase",
		gk:   schema.GroupKind{Kind: "PersistentVolumeClaim"}, obj: `{}`,
		wecs: []WEC{{Name: "a", Status: js(t, `{"phase":"Bound"}`)}, {Name: "b", Status: js(t, `{"phase":"Lost"}`)}, {Name: "c", Status: js(t, `{"phase":"Pending"}`)}},
		want: `{"phase":"Lost"}`,
	}, {
		name: "pod: the worst WEC's whole status",
		gk:   schema.GroupKind{Kind: "Pod"}, obj: `{"spec":{"restartPolicy":"Always"}}`,
		wecs: []WEC{
			{Name: "a", Status: js(t, `{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}`)},
			{Name: "b", Status: js(t, `{"phase":"Running","containerStatuses":[{"name":"c","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}`)},
		},
		want: `{"phase":"Running","containerStatuses":[{"name":"c","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}`,
	}}
}
