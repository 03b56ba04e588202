package register

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/config"
)

// OwnCRDs are the files (in config.CRDs) of statusfold's kinds that KubeStellar does not install
// in a WDS: ContentClassifier and AggregationPolicy. KubeStellar's controller-manager installs
// the others (BindingPolicy, Binding, CombinedStatus, StatusCollector; WorkStatus is the ITS's).
var OwnCRDs = []string{
	"crd/bases/control.kubestellar.io_contentclassifiers.yaml",
	"crd/bases/policy.statusfold.dev_aggregationpolicies.yaml",
}

// EnsureCRDs creates OwnCRDs, or updates them to this version; it never deletes one.
func EnsureCRDs(ctx context.Context, c client.Client) error {
	for _, f := range OwnCRDs {
		b, err := config.CRDs.ReadFile(f)
		if err != nil {
			return fmt.Errorf("register: %s: %w", f, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return fmt.Errorf("register: %s: %w", f, err)
		}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		if err := apply(ctx, c, crd); err != nil {
			return fmt.Errorf("register: CRD %s: %w", crd.Name, err)
		}
	}
	return nil
}
