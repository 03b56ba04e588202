package aggregation

import controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"

// The observedGeneration rule (docs/rules.md "Status return"): which WECs are current, and the
// observedGeneration written into the WDS object.

// objectGeneration is the object's metadata.generation, 0 when it has none.
func objectGeneration(obj map[string]any) int64 {
	md, _ := obj["metadata"].(map[string]any)
	return toNum(md["generation"]).i
}

// isCurrent is the currency of one WEC (docs/rules.md "Status return"): the WorkStatus says the WDS generation gen (or a
// later one) reached the WEC and was applied there, and — when the WEC copy's own generation is
// known — the reported status has observed it. A WEC without statusDetails, or that has reported
// nothing, is not known to be current.
func isCurrent(d *controlv1alpha1.StatusDetails, status map[string]any, gen int64) bool {
	if status == nil || d == nil || d.LastGeneration < gen || !d.LastGenerationIsApplied {
		return false
	}
	return d.WECGeneration == nil || observed(toNum(status["observedGeneration"]), *d.WECGeneration)
}

// observed says whether a status's observedGeneration has reached the WEC copy's generation.
func observed(obs num, wecGeneration int64) bool { return obs.ok && obs.i >= wecGeneration }

// returnedGeneration is the observedGeneration written into the WDS object: its generation when
// every contributing WEC is current, otherwise one less (never negative).
func returnedGeneration(gen int64, allCurrent bool) int64 {
	if allCurrent {
		return gen
	}
	return max(gen-1, 0)
}
