package health

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Status is an Argo CD health status.
type Status string

// Argo CD's health statuses, best first (Argo CD's order for "worst of").
const (
	Healthy     Status = "Healthy"
	Suspended   Status = "Suspended"
	Progressing Status = "Progressing"
	Missing     Status = "Missing"
	Degraded    Status = "Degraded"
	Unknown     Status = "Unknown"
)

var order = []Status{Healthy, Suspended, Progressing, Missing, Degraded, Unknown}

// Rank is the position of s in Argo CD's order (Healthy 0 … Unknown 5); an unknown string ranks
// as Unknown.
func (s Status) Rank() int {
	for i, o := range order {
		if o == s {
			return i
		}
	}
	return len(order) - 1
}

// Worst returns the worst of ss by Argo CD's order (Healthy for none).
func Worst(ss ...Status) Status {
	w := Healthy
	for _, s := range ss {
		if s.Rank() > w.Rank() {
			w = s
		}
	}
	return w
}

// Result is a health status with Argo CD's message.
type Result struct {
	Status  Status
	Message string
}

type checker func(obj map[string]any) (Result, error)

var checkers = map[schema.GroupKind]checker{
	{Group: "apps", Kind: "Deployment"}:                     deployment,
	{Group: "apps", Kind: "StatefulSet"}:                    statefulSet,
	{Group: "apps", Kind: "DaemonSet"}:                      daemonSet,
	{Group: "apps", Kind: "ReplicaSet"}:                     replicaSet,
	{Group: "batch", Kind: "Job"}:                           job,
	{Group: "", Kind: "Pod"}:                                pod,
	{Group: "", Kind: "PersistentVolumeClaim"}:              pvc,
	{Group: "", Kind: "Service"}:                            service,
	{Group: "networking.k8s.io", Kind: "Ingress"}:           ingress,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:   apiService,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}: hpa,
}

// Has reports whether Argo CD has a built-in health check for gk.
func Has(gk schema.GroupKind) bool { _, ok := checkers[gk]; return ok }

// Of computes Argo CD's health of obj (a whole object: metadata, spec, status). ok is false for
// kinds without a built-in check; err reports an object that does not convert to its type.
func Of(gk schema.GroupKind, obj map[string]any) (r Result, ok bool, err error) {
	c, ok := checkers[gk]
	if !ok {
		return Result{}, false, nil
	}
	r, err = c(obj)
	return r, true, err
}

func convert(obj map[string]any, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
		return fmt.Errorf("converting to %T: %w", into, err)
	}
	return nil
}

func deployment(obj map[string]any) (Result, error) {
	var d appsv1.Deployment
	if err := convert(obj, &d); err != nil {
		return Result{}, err
	}
	if d.Spec.Paused {
		return Result{Suspended, "Deployment is paused"}, nil
	}
	if d.Generation > d.Status.ObservedGeneration {
		return Result{Progressing, "Waiting for rollout to finish: observed deployment generation less than desired generation"}, nil
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			if c.Reason == "ProgressDeadlineExceeded" {
				return Result{Degraded, fmt.Sprintf("Deployment %q exceeded its progress deadline", d.Name)}, nil
			}
			break
		}
	}
	switch {
	case d.Spec.Replicas != nil && d.Status.UpdatedReplicas < *d.Spec.Replicas:
		return Result{Progressing, fmt.Sprintf("Waiting for rollout to finish: %d out of %d new replicas have been updated...", d.Status.UpdatedReplicas, *d.Spec.Replicas)}, nil
	case d.Status.Replicas > d.Status.UpdatedReplicas:
		return Result{Progressing, fmt.Sprintf("Waiting for rollout to finish: %d old replicas are pending termination...", d.Status.Replicas-d.Status.UpdatedReplicas)}, nil
	case d.Status.AvailableReplicas < d.Status.UpdatedReplicas:
		return Result{Progressing, fmt.Sprintf("Waiting for rollout to finish: %d of %d updated replicas are available...", d.Status.AvailableReplicas, d.Status.UpdatedReplicas)}, nil
	}
	return Result{Healthy, ""}, nil
}

func statefulSet(obj map[string]any) (Result, error) {
	var s appsv1.StatefulSet
	if err := convert(obj, &s); err != nil {
		return Result{}, err
	}
	if s.Status.ObservedGeneration == 0 || s.Generation > s.Status.ObservedGeneration {
		return Result{Progressing, "Waiting for statefulset spec update to be observed..."}, nil
	}
	if s.Spec.Replicas != nil && s.Status.ReadyReplicas < *s.Spec.Replicas {
		return Result{Progressing, fmt.Sprintf("Waiting for %d pods to be ready...", *s.Spec.Replicas-s.Status.ReadyReplicas)}, nil
	}
	if s.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && s.Spec.UpdateStrategy.RollingUpdate != nil {
		if s.Spec.Replicas != nil && s.Spec.UpdateStrategy.RollingUpdate.Partition != nil {
			if want := *s.Spec.Replicas - *s.Spec.UpdateStrategy.RollingUpdate.Partition; s.Status.UpdatedReplicas < want {
				return Result{Progressing, fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...", s.Status.UpdatedReplicas, want)}, nil
			}
		}
		return Result{Healthy, fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...", s.Status.UpdatedReplicas)}, nil
	}
	if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return Result{Healthy, fmt.Sprintf("statefulset has %d ready pods", s.Status.ReadyReplicas)}, nil
	}
	if s.Status.UpdateRevision != s.Status.CurrentRevision {
		return Result{Progressing, fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...", s.Status.UpdatedReplicas, s.Status.UpdateRevision)}, nil
	}
	return Result{Healthy, fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...", s.Status.CurrentReplicas, s.Status.CurrentRevision)}, nil
}

func daemonSet(obj map[string]any) (Result, error) {
	var d appsv1.DaemonSet
	if err := convert(obj, &d); err != nil {
		return Result{}, err
	}
	if d.Generation > d.Status.ObservedGeneration {
		return Result{Progressing, "Waiting for rollout to finish: observed daemon set generation less than desired generation"}, nil
	}
	if d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return Result{Healthy, fmt.Sprintf("daemon set %d out of %d new pods have been updated", d.Status.UpdatedNumberScheduled, d.Status.DesiredNumberScheduled)}, nil
	}
	if d.Status.UpdatedNumberScheduled < d.Status.DesiredNumberScheduled {
		return Result{Progressing, fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...", d.Name, d.Status.UpdatedNumberScheduled, d.Status.DesiredNumberScheduled)}, nil
	}
	if d.Status.NumberAvailable < d.Status.DesiredNumberScheduled {
		return Result{Progressing, fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...", d.Name, d.Status.NumberAvailable, d.Status.DesiredNumberScheduled)}, nil
	}
	return Result{Healthy, ""}, nil
}

func replicaSet(obj map[string]any) (Result, error) {
	var r appsv1.ReplicaSet
	if err := convert(obj, &r); err != nil {
		return Result{}, err
	}
	if r.Generation > r.Status.ObservedGeneration {
		return Result{Progressing, "Waiting for rollout to finish: observed replica set generation less than desired generation"}, nil
	}
	for _, c := range r.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure {
			if c.Status == corev1.ConditionTrue {
				return Result{Degraded, c.Message}, nil
			}
			break
		}
	}
	if r.Spec.Replicas != nil && r.Status.AvailableReplicas < *r.Spec.Replicas {
		return Result{Progressing, fmt.Sprintf("Waiting for rollout to finish: %d out of %d new replicas are available...", r.Status.AvailableReplicas, *r.Spec.Replicas)}, nil
	}
	return Result{Healthy, ""}, nil
}

func job(obj map[string]any) (Result, error) {
	var j batchv1.Job
	if err := convert(obj, &j); err != nil {
		return Result{}, err
	}
	failed, complete := false, false
	var failMsg, msg string
	for _, c := range j.Status.Conditions {
		switch c.Type {
		case batchv1.JobFailed:
			failed, complete, failMsg = true, true, c.Message
		case batchv1.JobComplete:
			complete, msg = true, c.Message
		}
	}
	switch {
	case !complete:
		return Result{Progressing, msg}, nil
	case failed:
		return Result{Degraded, failMsg}, nil
	}
	return Result{Healthy, msg}, nil
}

func pod(obj map[string]any) (Result, error) {
	var p corev1.Pod
	if err := convert(obj, &p); err != nil {
		return Result{}, err
	}
	if p.Spec.RestartPolicy == corev1.RestartPolicyAlways {
		var msgs []string
		for _, cs := range p.Status.ContainerStatuses {
			w := cs.State.Waiting
			if w != nil && (strings.HasPrefix(w.Reason, "Err") || strings.HasSuffix(w.Reason, "Error") || strings.HasSuffix(w.Reason, "BackOff")) {
				msgs = append(msgs, w.Message)
			}
		}
		if len(msgs) > 0 {
			return Result{Degraded, strings.Join(msgs, ", ")}, nil
		}
	}
	switch p.Status.Phase {
	case corev1.PodPending:
		return Result{Progressing, p.Status.Message}, nil
	case corev1.PodSucceeded:
		return Result{Healthy, p.Status.Message}, nil
	case corev1.PodFailed:
		return Result{Degraded, p.Status.Message}, nil
	case corev1.PodRunning:
		switch p.Spec.RestartPolicy {
		case corev1.RestartPolicyAlways:
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return Result{Healthy, p.Status.Message}, nil
				}
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.LastTerminationState.Terminated != nil {
					return Result{Degraded, p.Status.Message}, nil
				}
			}
			return Result{Progressing, p.Status.Message}, nil
		case corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
			return Result{Progressing, p.Status.Message}, nil
		}
	}
	return Result{Unknown, p.Status.Message}, nil
}

func pvc(obj map[string]any) (Result, error) {
	var p corev1.PersistentVolumeClaim
	if err := convert(obj, &p); err != nil {
		return Result{}, err
	}
	switch p.Status.Phase {
	case corev1.ClaimLost:
		return Result{Degraded, ""}, nil
	case corev1.ClaimPending:
		return Result{Progressing, ""}, nil
	case corev1.ClaimBound:
		return Result{Healthy, ""}, nil
	}
	return Result{Unknown, ""}, nil
}

func service(obj map[string]any) (Result, error) {
	var s corev1.Service
	if err := convert(obj, &s); err != nil {
		return Result{}, err
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) == 0 {
		return Result{Progressing, ""}, nil
	}
	return Result{Healthy, ""}, nil
}

func ingress(obj map[string]any) (Result, error) {
	var i networkingv1.Ingress
	if err := convert(obj, &i); err != nil {
		return Result{}, err
	}
	if len(i.Status.LoadBalancer.Ingress) > 0 {
		return Result{Healthy, ""}, nil
	}
	return Result{Progressing, ""}, nil
}

// apiService reads status.conditions directly (the apiregistration types live in kube-aggregator,
// which statusfold does not otherwise need); the rule is Argo CD's: the first Available condition
// decides, True → Healthy, else Progressing; none → Progressing.
func apiService(obj map[string]any) (Result, error) {
	status, _ := obj["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, x := range conds {
		c, _ := x.(map[string]any)
		if c["type"] != "Available" {
			continue
		}
		msg := fmt.Sprintf("%v: %v", c["reason"], c["message"])
		if c["status"] == "True" {
			return Result{Healthy, msg}, nil
		}
		return Result{Progressing, msg}, nil
	}
	return Result{Progressing, "Waiting to be processed"}, nil
}

var hpaDegraded = map[[2]string]bool{
	{"AbleToScale", "FailedGetScale"}: true, {"AbleToScale", "FailedUpdateScale"}: true,
	{"ScalingActive", "FailedGetResourceMetric"}: true, {"ScalingActive", "InvalidSelector"}: true,
}

var hpaHealthy = map[[2]string]bool{
	{"AbleToScale", "SucceededRescale"}: true, {"ScalingLimited", "DesiredWithinRange"}: true,
	{"ScalingLimited", "TooFewReplicas"}: true, {"ScalingLimited", "TooManyReplicas"}: true,
}

// hpa follows Argo CD's autoscaling/v2 rule: the first condition that is a known degraded or
// healthy (type, reason) pair decides; none → Progressing "Waiting to Autoscale".
func hpa(obj map[string]any) (Result, error) {
	var h autoscalingv2.HorizontalPodAutoscaler
	if err := convert(obj, &h); err != nil {
		return Result{}, err
	}
	for _, c := range h.Status.Conditions {
		k := [2]string{string(c.Type), c.Reason}
		if hpaDegraded[k] {
			return Result{Degraded, c.Message}, nil
		}
		if hpaHealthy[k] {
			return Result{Healthy, c.Message}, nil
		}
	}
	return Result{Progressing, "Waiting to Autoscale"}, nil
}
