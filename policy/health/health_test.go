package health

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOf(t *testing.T) {
	dep := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	sts := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	ds := schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	rs := schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	job := schema.GroupKind{Group: "batch", Kind: "Job"}
	pod := schema.GroupKind{Kind: "Pod"}
	pvc := schema.GroupKind{Kind: "PersistentVolumeClaim"}
	svc := schema.GroupKind{Kind: "Service"}
	ing := schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}
	api := schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}
	hpa := schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}
	cases := []struct {
		name string
		gk   schema.GroupKind
		obj  string
		want Status
	}{
		{"deployment paused", dep, `{"metadata":{"generation":2},"spec":{"paused":true}}`, Suspended},
		{"deployment generation not observed", dep, `{"metadata":{"generation":2},"spec":{"replicas":1},"status":{"observedGeneration":1,"replicas":1,"updatedReplicas":1,"availableReplicas":1}}`, Progressing},
		{"deployment deadline exceeded", dep, `{"metadata":{"generation":2},"spec":{"replicas":1},"status":{"observedGeneration":2,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded"}]}}`, Degraded},
		{"deployment old replicas left", dep, `{"metadata":{"generation":2},"spec":{"replicas":2},"status":{"observedGeneration":2,"replicas":3,"updatedReplicas":2,"availableReplicas":2}}`, Progressing},
		{"deployment unavailable", dep, `{"metadata":{"generation":2},"spec":{"replicas":2},"status":{"observedGeneration":2,"replicas":2,"updatedReplicas":2,"availableReplicas":1}}`, Progressing},
		{"deployment healthy", dep, `{"metadata":{"generation":2},"spec":{"replicas":2},"status":{"observedGeneration":2,"replicas":2,"updatedReplicas":2,"availableReplicas":2}}`, Healthy},
		{"statefulset observed 0", sts, `{"spec":{"replicas":1},"status":{"readyReplicas":1}}`, Progressing},
		{"statefulset partition", sts, `{"metadata":{"generation":1},"spec":{"replicas":3,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}}},"status":{"observedGeneration":1,"readyReplicas":3,"updatedReplicas":1}}`, Progressing},
		{"statefulset revisions differ", sts, `{"metadata":{"generation":1},"spec":{"replicas":1},"status":{"observedGeneration":1,"readyReplicas":1,"currentRevision":"a","updateRevision":"b"}}`, Progressing},
		{"statefulset on delete", sts, `{"metadata":{"generation":1},"spec":{"replicas":1,"updateStrategy":{"type":"OnDelete"}},"status":{"observedGeneration":1,"readyReplicas":1,"currentRevision":"a","updateRevision":"b"}}`, Healthy},
		{"daemonset not updated", ds, `{"metadata":{"generation":1},"status":{"observedGeneration":1,"desiredNumberScheduled":2,"updatedNumberScheduled":1,"numberAvailable":2}}`, Progressing},
		{"daemonset healthy", ds, `{"metadata":{"generation":1},"status":{"observedGeneration":1,"desiredNumberScheduled":2,"updatedNumberScheduled":2,"numberAvailable":2}}`, Healthy},
		{"replicaset failure", rs, `{"metadata":{"generation":1},"spec":{"replicas":1},"status":{"observedGeneration":1,"availableReplicas":1,"conditions":[{"type":"ReplicaFailure","status":"True"}]}}`, Degraded},
		{"replicaset healthy", rs, `{"metadata":{"generation":1},"spec":{"replicas":1},"status":{"observedGeneration":1,"availableReplicas":1}}`, Healthy},
		{"job running", job, `{"status":{"active":1}}`, Progressing},
		{"job failed", job, `{"status":{"conditions":[{"type":"Failed","status":"True"}]}}`, Degraded},
		{"job complete", job, `{"status":{"conditions":[{"type":"Complete","status":"True"}]}}`, Healthy},
		{"pod crashloop", pod, `{"spec":{"restartPolicy":"Always"},"status":{"phase":"Running","containerStatuses":[{"name":"c","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}}`, Degraded},
		{"pod ready", pod, `{"spec":{"restartPolicy":"Always"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`, Healthy},
		{"pod hook running", pod, `{"spec":{"restartPolicy":"Never"},"status":{"phase":"Running"}}`, Progressing},
		{"pod no phase", pod, `{"spec":{"restartPolicy":"Always"},"status":{}}`, Unknown},
		{"pvc lost", pvc, `{"status":{"phase":"Lost"}}`, Degraded},
		{"pvc bound", pvc, `{"status":{"phase":"Bound"}}`, Healthy},
		{"pvc none", pvc, `{}`, Unknown},
		{"service lb pending", svc, `{"spec":{"type":"LoadBalancer"},"status":{"loadBalancer":{}}}`, Progressing},
		{"service cluster ip", svc, `{"spec":{"type":"ClusterIP"}}`, Healthy},
		{"ingress with address", ing, `{"status":{"loadBalancer":{"ingress":[{"ip":"1.2.3.4"}]}}}`, Healthy},
		{"ingress without", ing, `{}`, Progressing},
		{"apiservice available", api, `{"status":{"conditions":[{"type":"Available","status":"True"}]}}`, Healthy},
		{"apiservice unavailable", api, `{"status":{"conditions":[{"type":"Available","status":"False"}]}}`, Progressing},
		{"hpa first decisive degraded", hpa, `{"status":{"conditions":[{"type":"ScalingActive","status":"False","reason":"FailedGetResourceMetric"},{"type":"AbleToScale","status":"True","reason":"SucceededRescale"}]}}`, Degraded},
		{"hpa healthy", hpa, `{"status":{"conditions":[{"type":"ScalingLimited","status":"False","reason":"DesiredWithinRange"}]}}`, Healthy},
		{"hpa waiting", hpa, `{"status":{}}`, Progressing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Of(tc.gk, obj(t, tc.obj))
			if !ok || err != nil {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			if got.Status != tc.want {
				t.Errorf("got %s (%s), want %s", got.Status, got.Message, tc.want)
			}
		})
	}
	if _, ok, _ := Of(schema.GroupKind{Group: "example.com", Kind: "Widget"}, map[string]any{}); ok {
		t.Error("a kind without a check reported one")
	}
}

func TestWorst(t *testing.T) {
	cases := []struct {
		in   []Status
		want Status
	}{
		{nil, Healthy},
		{[]Status{Healthy, Suspended}, Suspended},
		{[]Status{Progressing, Suspended, Healthy}, Progressing},
		{[]Status{Degraded, Missing}, Degraded},
		{[]Status{Degraded, Unknown, Healthy}, Unknown},
		{[]Status{"Weird", Healthy}, "Weird"},
	}
	for _, tc := range cases {
		if got := Worst(tc.in...); got != tc.want {
			t.Errorf("Worst(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
