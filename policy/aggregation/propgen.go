package aggregation

import (
	"fmt"
	"math/rand/v2"

	"k8s.io/apimachinery/pkg/runtime/schema"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// The property's generators of realistic WEC statuses, one per kind with a built-in module: used by
// the property tests and by CheckProperty (`statusfold policy test --property`).

// generator generates the kind-specific parts of a case: the object's spec, and one WEC's status;
// obs is the generation that status observed (genWECs decides which WECs report nothing).
type generator struct {
	spec   func(r *rand.Rand) map[string]any
	status func(r *rand.Rand, spec map[string]any, obs int64) map[string]any
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func ts(r *rand.Rand) string {
	return fmt.Sprintf("2025-11-%02dT%02d:%02d:00Z", 1+r.IntN(28), r.IntN(24), r.IntN(60))
}

func condition(r *rand.Rand, typ, status, reason string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": typ + " " + reason, "lastTransitionTime": ts(r)}
}

// putCount sets a count, leaving zero out half the time as the API's omitempty does.
func putCount(r *rand.Rand, m map[string]any, k string, v int64) {
	if v != 0 || r.IntN(2) == 0 {
		m[k] = v
	}
}

func specReplicas(spec map[string]any) int64 { return spec["replicas"].(int64) }

var generators = map[schema.GroupKind]generator{
	{Group: "apps", Kind: "Deployment"}: {
		spec: func(r *rand.Rand) map[string]any {
			s := map[string]any{"replicas": int64(1 + r.IntN(5))}
			if r.IntN(10) == 0 {
				s["paused"] = true
			}
			return s
		},
		status: func(r *rand.Rand, spec map[string]any, obs int64) map[string]any {
			want := specReplicas(spec)
			st := map[string]any{"observedGeneration": obs}
			var upd, total, avail int64
			switch r.IntN(3) {
			case 0: // complete
				upd, total, avail = want, want, want
			default: // rolling: new RS up to the target, old pods besides, surge of up to 2
				upd = r.Int64N(want + 1)
				total = upd + r.Int64N(want-upd+3)
				avail = r.Int64N(total + 1)
			}
			putCount(r, st, "replicas", total)
			putCount(r, st, "updatedReplicas", upd)
			putCount(r, st, "availableReplicas", avail)
			putCount(r, st, "readyReplicas", avail)
			putCount(r, st, "unavailableReplicas", max(total-avail, 0))
			var conds []any
			if r.IntN(5) > 0 {
				switch r.IntN(4) {
				case 0:
					conds = append(conds, condition(r, "Progressing", "False", "ProgressDeadlineExceeded"))
				case 1:
					conds = append(conds, condition(r, "Progressing", "True", "ReplicaSetUpdated"))
				default:
					conds = append(conds, condition(r, "Progressing", "True", "NewReplicaSetAvailable"))
				}
			}
			if r.IntN(4) > 0 {
				conds = append(conds, condition(r, "Available", pick(r, "True", "False"), "MinimumReplicas"))
			}
			if r.IntN(8) == 0 {
				conds = append(conds, condition(r, "ReplicaFailure", "True", "FailedCreate"))
			}
			r.Shuffle(len(conds), func(i, j int) { conds[i], conds[j] = conds[j], conds[i] })
			if conds != nil {
				st["conditions"] = conds
			}
			return st
		},
	},
	{Group: "apps", Kind: "ReplicaSet"}: {
		spec: func(r *rand.Rand) map[string]any { return map[string]any{"replicas": int64(1 + r.IntN(5))} },
		status: func(r *rand.Rand, spec map[string]any, obs int64) map[string]any {
			want := specReplicas(spec)
			st := map[string]any{"observedGeneration": obs}
			total := r.Int64N(want + 2)
			putCount(r, st, "replicas", total)
			avail := r.Int64N(total + 1)
			putCount(r, st, "availableReplicas", avail)
			putCount(r, st, "readyReplicas", avail)
			putCount(r, st, "fullyLabeledReplicas", total)
			switch r.IntN(4) {
			case 0:
				st["conditions"] = []any{condition(r, "ReplicaFailure", "True", "FailedCreate")}
			case 1:
				st["conditions"] = []any{condition(r, "ReplicaFailure", "False", "")}
			}
			return st
		},
	},
	{Group: "apps", Kind: "StatefulSet"}: {
		spec: func(r *rand.Rand) map[string]any {
			n := int64(1 + r.IntN(5))
			s := map[string]any{"replicas": n}
			switch r.IntN(4) {
			case 0:
				s["updateStrategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": r.Int64N(n + 1)}}
			case 1:
				s["updateStrategy"] = map[string]any{"type": "OnDelete"}
			case 2:
				s["updateStrategy"] = map[string]any{"type": "RollingUpdate"}
			}
			return s
		},
		status: func(r *rand.Rand, spec map[string]any, obs int64) map[string]any {
			want := specReplicas(spec)
			st := map[string]any{"observedGeneration": obs}
			putCount(r, st, "replicas", want+r.Int64N(2))
			putCount(r, st, "readyReplicas", r.Int64N(want+1))
			putCount(r, st, "availableReplicas", r.Int64N(want+1))
			putCount(r, st, "updatedReplicas", r.Int64N(want+1))
			putCount(r, st, "currentReplicas", r.Int64N(want+1))
			h := fmt.Sprintf("web-%x", r.Uint32())
			st["currentRevision"] = h
			st["updateRevision"] = h
			if r.IntN(2) == 0 {
				st["updateRevision"] = fmt.Sprintf("web-%x", r.Uint32())
			}
			return st
		},
	},
	{Group: "apps", Kind: "DaemonSet"}: {
		spec: func(r *rand.Rand) map[string]any {
			if r.IntN(4) == 0 {
				return map[string]any{"updateStrategy": map[string]any{"type": "OnDelete"}}
			}
			return map[string]any{"updateStrategy": map[string]any{"type": "RollingUpdate"}}
		},
		status: func(r *rand.Rand, _ map[string]any, obs int64) map[string]any {
			desired := r.Int64N(6) // each WEC has its own number of eligible nodes
			st := map[string]any{"observedGeneration": obs}
			putCount(r, st, "desiredNumberScheduled", desired)
			putCount(r, st, "currentNumberScheduled", desired)
			putCount(r, st, "updatedNumberScheduled", r.Int64N(desired+2))
			avail := r.Int64N(desired + 2)
			putCount(r, st, "numberAvailable", avail)
			putCount(r, st, "numberReady", avail)
			putCount(r, st, "numberUnavailable", max(desired-avail, 0))
			putCount(r, st, "numberMisscheduled", r.Int64N(2))
			return st
		},
	},
	{Group: "batch", Kind: "Job"}: {
		spec: func(r *rand.Rand) map[string]any { return map[string]any{"completions": int64(1 + r.IntN(3))} },
		status: func(r *rand.Rand, _ map[string]any, _ int64) map[string]any {
			st := map[string]any{"startTime": ts(r)}
			switch r.IntN(4) {
			case 0: // running
				putCount(r, st, "active", int64(1+r.IntN(3)))
			case 1:
				putCount(r, st, "succeeded", int64(1+r.IntN(3)))
				st["completionTime"] = ts(r)
				st["conditions"] = []any{condition(r, "SuccessCriteriaMet", "True", "CompletionsReached"), condition(r, "Complete", "True", "CompletionsReached")}
			case 2:
				putCount(r, st, "failed", int64(1+r.IntN(3)))
				st["conditions"] = []any{condition(r, "FailureTarget", "True", "BackoffLimitExceeded"), condition(r, "Failed", "True", "BackoffLimitExceeded")}
			case 3:
				st["conditions"] = []any{condition(r, "Suspended", pick(r, "True", "False"), "JobSuspended")}
			}
			return st
		},
	},
	{Group: "", Kind: "Pod"}: {
		spec: func(r *rand.Rand) map[string]any {
			return map[string]any{"restartPolicy": pick(r, "Always", "Always", "OnFailure", "Never")}
		},
		status: func(r *rand.Rand, _ map[string]any, _ int64) map[string]any {
			st := map[string]any{"phase": pick(r, "Pending", "Running", "Running", "Succeeded", "Failed", "")}
			if r.IntN(3) == 0 {
				st["message"] = "node pressure"
			}
			cs := map[string]any{"name": "app", "ready": r.IntN(2) == 0, "restartCount": r.Int64N(3)}
			switch r.IntN(5) {
			case 0:
				cs["state"] = map[string]any{"waiting": map[string]any{"reason": pick(r, "CrashLoopBackOff", "ErrImagePull", "CreateContainerConfigError", "ContainerCreating"), "message": "waiting"}}
			case 1:
				cs["state"] = map[string]any{"running": map[string]any{"startedAt": ts(r)}}
				cs["lastState"] = map[string]any{"terminated": map[string]any{"exitCode": int64(1), "reason": "Error"}}
			default:
				cs["state"] = map[string]any{"running": map[string]any{"startedAt": ts(r)}}
			}
			st["containerStatuses"] = []any{cs}
			if r.IntN(3) > 0 {
				st["conditions"] = []any{condition(r, "Ready", pick(r, "True", "False"), "")}
			}
			return st
		},
	},
	{Group: "", Kind: "PersistentVolumeClaim"}: {
		spec: func(r *rand.Rand) map[string]any { return map[string]any{"accessModes": []any{"ReadWriteOnce"}} },
		status: func(r *rand.Rand, _ map[string]any, _ int64) map[string]any {
			st := map[string]any{}
			if p := pick(r, "Bound", "Bound", "Pending", "Lost", "", "Resizing"); p != "" {
				st["phase"] = p
			}
			return st
		},
	},
	{Group: "", Kind: "Service"}: {
		spec: func(r *rand.Rand) map[string]any {
			return map[string]any{"type": pick(r, "LoadBalancer", "LoadBalancer", "ClusterIP", "NodePort")}
		},
		status: lbStatus,
	},
	{Group: "networking.k8s.io", Kind: "Ingress"}: {
		spec:   func(r *rand.Rand) map[string]any { return map[string]any{"ingressClassName": "nginx"} },
		status: lbStatus,
	},
	{Group: "apiregistration.k8s.io", Kind: "APIService"}: {
		spec: func(r *rand.Rand) map[string]any {
			return map[string]any{"group": "metrics.k8s.io", "version": "v1beta1"}
		},
		status: func(r *rand.Rand, _ map[string]any, _ int64) map[string]any {
			if r.IntN(4) == 0 {
				return map[string]any{}
			}
			return map[string]any{"conditions": []any{condition(r, "Available", pick(r, "True", "True", "False", "Unknown"), "Passed")}}
		},
	},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}: {
		spec: func(r *rand.Rand) map[string]any {
			return map[string]any{"minReplicas": int64(1), "maxReplicas": int64(5)}
		},
		status: func(r *rand.Rand, _ map[string]any, obs int64) map[string]any {
			pool := [][2]string{
				{"AbleToScale", "SucceededRescale"}, {"AbleToScale", "ReadyForNewScale"}, {"AbleToScale", "FailedGetScale"},
				{"ScalingActive", "ValidMetricFound"}, {"ScalingActive", "FailedGetResourceMetric"}, {"ScalingActive", "InvalidSelector"},
				{"ScalingLimited", "DesiredWithinRange"}, {"ScalingLimited", "TooManyReplicas"}, {"ScalingLimited", "ScaleDownStabilized"},
			}
			st := map[string]any{"observedGeneration": obs, "currentReplicas": r.Int64N(5), "desiredReplicas": r.Int64N(5)}
			var conds []any
			for _, i := range r.Perm(len(pool))[:r.IntN(4)] {
				conds = append(conds, condition(r, pool[i][0], pick(r, "True", "False"), pool[i][1]))
			}
			if conds != nil {
				st["conditions"] = conds
			}
			return st
		},
	},
}

func lbStatus(r *rand.Rand, _ map[string]any, _ int64) map[string]any {
	var ing []any
	for range r.IntN(3) {
		ing = append(ing, map[string]any{"ip": fmt.Sprintf("10.0.%d.%d", r.IntN(3), r.IntN(3))})
	}
	lb := map[string]any{}
	if ing != nil {
		lb["ingress"] = ing
	}
	return map[string]any{"loadBalancer": lb}
}

// genWECs generates n WECs for an object at generation gen: lagging ones, unapplied ones,
// unreported ones, with and without the WEC copy's generation. In a calm case every WEC is current
// and most are healthy (by healthy), so that one WEC's trouble must show through healthy ones.
func genWECs(r *rand.Rand, g generator, obj map[string]any, gen int64, n int, healthy func(WEC) bool) []WEC {
	spec := obj["spec"].(map[string]any)
	if r.IntN(2) == 0 {
		return genCalmWECs(r, g, obj, gen, n, healthy)
	}
	wecs := make([]WEC, n)
	for i := range wecs {
		w := WEC{Name: fmt.Sprintf("wec%02d", i)}
		d := &controlv1alpha1.StatusDetails{LastGeneration: gen, LastGenerationIsApplied: true}
		switch r.IntN(8) {
		case 0:
			d.LastGeneration = gen - 1 - r.Int64N(gen) // lagging (may be 0: nothing propagated yet)
		case 1:
			d.LastGenerationIsApplied = false
		}
		wecGen := 1 + r.Int64N(4)
		obs := wecGen
		if r.IntN(6) == 0 {
			obs = wecGen - 1 // the WEC's controller has not observed its copy's latest generation
		}
		if r.IntN(3) > 0 {
			d.WECGeneration = &wecGen
		}
		if r.IntN(12) > 0 {
			w.Details = d
		}
		if r.IntN(10) > 0 {
			w.Status = g.status(r, spec, obs)
		}
		wecs[i] = w
	}
	return wecs
}

func genCalmWECs(r *rand.Rand, g generator, obj map[string]any, gen int64, n int, healthy func(WEC) bool) []WEC {
	spec := obj["spec"].(map[string]any)
	wecs := make([]WEC, n)
	for i := range wecs {
		wecGen := 1 + r.Int64N(4)
		w := WEC{Name: fmt.Sprintf("wec%02d", i), Details: &controlv1alpha1.StatusDetails{LastGeneration: gen, LastGenerationIsApplied: true, WECGeneration: &wecGen}}
		w.Status = g.status(r, spec, wecGen)
		for try := 0; try < 30 && r.IntN(10) < 7 && !healthy(w); try++ {
			w.Status = g.status(r, spec, wecGen)
		}
		wecs[i] = w
	}
	return wecs
}

// gvFor is the apiVersion of a generated object of kind gk.
func gvFor(gk schema.GroupKind) string {
	switch gk.Group {
	case "":
		return "v1"
	case "autoscaling":
		return "autoscaling/v2"
	}
	return gk.Group + "/v1"
}
