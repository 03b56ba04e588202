package aggregator

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// toApply turns a typed object into a server-side apply configuration: apiVersion and kind from
// the scheme's group version, no status unless keepStatus, no server-set metadata.
func toApply(obj client.Object, kind string, keepStatus bool) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind(kind))
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	if !keepStatus {
		unstructured.RemoveNestedField(u.Object, "status")
	}
	return u, nil
}

// apply server-side applies u under FieldManager, on the main resource, or on the subresource
// when it is not "". force takes fields over from other managers: used for what statusfold alone
// writes (Bindings, CombinedStatuses, our kinds' status), never for workload objects.
func (a *Aggregator) apply(ctx context.Context, u *unstructured.Unstructured, subresource string, force bool, what string) error {
	ac := client.ApplyConfigurationFromUnstructured(u)
	var err error
	if subresource == "" {
		opts := []client.ApplyOption{client.FieldOwner(FieldManager)}
		if force {
			opts = append(opts, client.ForceOwnership)
		}
		err = a.wds.Apply(ctx, ac, opts...)
	} else {
		opts := []client.SubResourceApplyOption{client.FieldOwner(FieldManager)}
		if force {
			opts = append(opts, client.ForceOwnership)
		}
		err = a.wds.SubResource(subresource).Apply(ctx, ac, opts...)
	}
	if err != nil {
		a.metrics.errors.WithLabelValues("write").Inc()
		return fmt.Errorf("apply %s %s/%s: %w", what, u.GetNamespace(), u.GetName(), err)
	}
	a.metrics.writes.WithLabelValues(what, "apply").Inc()
	return nil
}
