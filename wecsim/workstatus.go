package wecsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// WorkStatusName is the name the WEC-side agent gives the WorkStatus of an object:
// <group><version>-<kind>-<namespace>-<name>, lowercase (the namespace part only for namespaced
// objects).
func WorkStatusName(group, version, kind, namespace, name string) string {
	parts := []string{strings.ReplaceAll(group, ".", "") + version, kind}
	if namespace != "" {
		parts = append(parts, namespace)
	}
	parts = append(parts, name)
	return strings.ToLower(strings.Join(parts, "-"))
}

// workStatus is the WorkStatus in which the WEC's agent reports rep, the WEC's state of obj, at
// now (the currency time, to the second).
func (r *Runner) workStatus(obj Object, wec string, rep Report, now time.Time) *controlv1alpha1.WorkStatus {
	raw, _ := json.Marshal(rep.Status)
	wecGen := rep.WECGeneration
	return &controlv1alpha1.WorkStatus{
		ObjectMeta: metav1.ObjectMeta{
			Name:      WorkStatusName(obj.Group, obj.Version, obj.Kind, obj.Namespace, obj.Name),
			Namespace: wec,
			Labels:    map[string]string{controlv1alpha1.LabelOriginWDSName: r.WDSName, LabelSimulated: "true"},
		},
		Spec: controlv1alpha1.WorkStatusSpec{SourceRef: controlv1alpha1.SourceRef{
			Group: obj.Group, Version: obj.Version, Resource: obj.Resource, Kind: obj.Kind,
			Namespace: obj.Namespace, Name: obj.Name,
		}},
		Status: controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: raw}},
		StatusDetails: controlv1alpha1.StatusDetails{
			LastGeneration:          rep.LastGeneration,
			LastGenerationIsApplied: rep.LastGenerationIsApplied,
			LastCurrencyUpdateTime:  metav1.NewTime(now.UTC().Truncate(time.Second)),
			WECGeneration:           &wecGen,
		},
	}
}

// writeWorkStatus creates or updates ws when its content differs from what is stored: the main
// resource (labels, sourceRef, statusDetails) and the status subresource, as the agent does.
func (r *Runner) writeWorkStatus(ctx context.Context, ws, cur *controlv1alpha1.WorkStatus) error {
	if cur == nil {
		status := ws.Status
		if err := r.its().Create(ctx, ws); err != nil {
			return fmt.Errorf("creating WorkStatus %s/%s: %w", ws.Namespace, ws.Name, err)
		}
		ws.Status = status
		r.logf("%s/%s: first report", ws.Namespace, ws.Name)
		return r.its().Status().Update(ctx, ws)
	}
	if !sameJSON(cur.Status.Raw, ws.Status.Raw) {
		cur.Status = ws.Status
		cur.StatusDetails.LastCurrencyUpdateTime = ws.StatusDetails.LastCurrencyUpdateTime
		if err := r.its().Status().Update(ctx, cur); err != nil {
			return fmt.Errorf("updating WorkStatus %s/%s status: %w", ws.Namespace, ws.Name, err)
		}
	} else {
		// Unchanged state keeps its currency time, as the agent reports only changes.
		ws.StatusDetails.LastCurrencyUpdateTime = cur.StatusDetails.LastCurrencyUpdateTime
	}
	if cur.Spec != ws.Spec || !sameDetails(cur.StatusDetails, ws.StatusDetails) || !labelsInclude(cur.Labels, ws.Labels) {
		cur.Spec, cur.StatusDetails = ws.Spec, ws.StatusDetails
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		for k, v := range ws.Labels {
			cur.Labels[k] = v
		}
		if err := r.its().Update(ctx, cur); err != nil {
			return fmt.Errorf("updating WorkStatus %s/%s: %w", ws.Namespace, ws.Name, err)
		}
	}
	return nil
}

// sameJSON says whether a and b are the same JSON value (false when either does not parse).
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

// sameDetails says whether a and b are the same status details.
func sameDetails(a, b controlv1alpha1.StatusDetails) bool {
	return a.LastGeneration == b.LastGeneration && a.LastGenerationIsApplied == b.LastGenerationIsApplied &&
		a.LastCurrencyUpdateTime.Equal(&b.LastCurrencyUpdateTime) &&
		(a.WECGeneration == nil) == (b.WECGeneration == nil) &&
		(a.WECGeneration == nil || *a.WECGeneration == *b.WECGeneration)
}

// listOwn lists the WorkStatuses this runner wrote (for its WDS), by key: one list per tick
// instead of one read per (object, WEC) pair.
func (r *Runner) listOwn(ctx context.Context) (map[client.ObjectKey]*controlv1alpha1.WorkStatus, error) {
	var list controlv1alpha1.WorkStatusList
	if err := r.its().List(ctx, &list, client.MatchingLabels{
		controlv1alpha1.LabelOriginWDSName: r.WDSName, LabelSimulated: "true",
	}); err != nil {
		return nil, fmt.Errorf("listing WorkStatuses: %w", err)
	}
	out := make(map[client.ObjectKey]*controlv1alpha1.WorkStatus, len(list.Items))
	for i := range list.Items {
		out[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
	}
	return out, nil
}

// deleteStale deletes the simulator's WorkStatuses (for this WDS) that keep does not list.
func (r *Runner) deleteStale(ctx context.Context, existing map[client.ObjectKey]*controlv1alpha1.WorkStatus, keep map[client.ObjectKey]bool) error {
	var errs []error
	for key, ws := range existing {
		if keep[key] {
			continue
		}
		if err := r.its().Delete(ctx, ws); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		r.logf("%s/%s: deleted (no longer bound)", ws.Namespace, ws.Name)
	}
	return errors.Join(errs...)
}
