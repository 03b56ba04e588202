package wecsim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// registerWEC creates the WEC's mailbox namespace and ManagedCluster when mc (what is registered
// now) is nil, and puts back its labels when they changed.
func (r *Runner) registerWEC(ctx context.Context, w WEC, mc *clusterv1.ManagedCluster) error {
	if mc == nil {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.Name}}
		if err := r.its().Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating mailbox namespace %s: %w", w.Name, err)
		}
		mc = &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: w.Name, Labels: w.Labels},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		}
		if err := r.its().Create(ctx, mc); err != nil {
			return fmt.Errorf("registering WEC %s: %w", w.Name, err)
		}
		r.logf("WEC %s joined (%s, region %s)", w.Name, w.Role, w.Labels[LabelRegion])
		return nil
	}
	if labelsInclude(mc.Labels, w.Labels) {
		return nil
	}
	if mc.Labels == nil {
		mc.Labels = map[string]string{}
	}
	for k, v := range w.Labels {
		mc.Labels[k] = v
	}
	return r.its().Update(ctx, mc)
}

// deregisterWEC deletes the WEC's ManagedCluster (the WEC left at tick); one already gone is not
// an error.
func (r *Runner) deregisterWEC(ctx context.Context, mc *clusterv1.ManagedCluster, tick int) error {
	err := r.its().Delete(ctx, mc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deregistering WEC %s: %w", mc.Name, err)
	}
	r.logf("WEC %s left at tick %d", mc.Name, tick)
	return nil
}

// labelsInclude says whether have holds every label of want, with the same value.
func labelsInclude(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
