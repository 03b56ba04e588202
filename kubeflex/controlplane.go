package kubeflex

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The ControlPlane kind and the label KubeStellar sorts ControlPlanes by.
const (
	// TypeLabel is KubeStellar's label naming a ControlPlane's role: TypeWDS or TypeITS.
	TypeLabel = "kflex.kubestellar.io/cptype"
	TypeWDS   = "wds"
	TypeITS   = "its"
	// SpecTypeHost is the spec.type of a ControlPlane that is the hosting cluster itself.
	SpecTypeHost = "host"
)

// ControlPlaneGVK is KubeFlex's ControlPlane kind.
var ControlPlaneGVK = schema.GroupVersionKind{Group: "tenancy.kflex.kubestellar.org", Version: "v1alpha1", Kind: "ControlPlane"}

// ControlPlane is what statusfold reads of a KubeFlex ControlPlane.
type ControlPlane struct {
	Name string
	// Role is the kflex.kubestellar.io/cptype label ("" when the label is not set yet).
	Role string
	// Type is spec.type: k8s, vcluster, host, …
	Type string
	// SecretRef is status.secretRef; nil until KubeFlex has written it.
	SecretRef *SecretRef
}

// SecretRef names the Secret holding a ControlPlane's kubeconfig and its two keys: Key for
// clients outside the hosting cluster, InClusterKey for pods inside it.
type SecretRef struct {
	Namespace, Name, Key, InClusterKey string
}

// IsHost reports whether the ControlPlane is the hosting cluster itself.
func (cp ControlPlane) IsHost() bool { return cp.Type == SpecTypeHost }

// String names the ControlPlane for log lines and errors.
func (cp ControlPlane) String() string {
	if cp.Role == "" {
		return fmt.Sprintf("ControlPlane %q", cp.Name)
	}
	return fmt.Sprintf("ControlPlane %q (%s)", cp.Name, cp.Role)
}

// newControlPlaneObject is an empty unstructured ControlPlane, for Get.
func newControlPlaneObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ControlPlaneGVK)
	return u
}

// fromUnstructured reads the fields of ControlPlane from u; fields of the wrong type read as
// unset.
func fromUnstructured(u *unstructured.Unstructured) ControlPlane {
	cp := ControlPlane{Name: u.GetName(), Role: u.GetLabels()[TypeLabel]}
	cp.Type, _, _ = unstructured.NestedString(u.Object, "spec", "type")
	ref, found, _ := unstructured.NestedStringMap(u.Object, "status", "secretRef")
	if found {
		cp.SecretRef = &SecretRef{Namespace: ref["namespace"], Name: ref["name"], Key: ref["key"], InClusterKey: ref["inClusterKey"]}
	}
	return cp
}
