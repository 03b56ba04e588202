package kubeflex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NotReadyError says that a space cannot be reached yet and what is missing (a ControlPlane, its
// status.secretRef, the Secret, a key of it). Waiting may end it.
type NotReadyError struct{ Missing string }

func (e *NotReadyError) Error() string { return e.Missing }

func notReady(format string, args ...any) error {
	return &NotReadyError{Missing: fmt.Sprintf(format, args...)}
}

// IsNotReady reports whether err is (or wraps) a NotReadyError.
func IsNotReady(err error) bool {
	var nr *NotReadyError
	return errors.As(err, &nr)
}

// Finder looks spaces up in the hosting cluster.
type Finder struct {
	// Client reads the hosting cluster: ControlPlanes and the Secrets they name.
	Client client.Reader
	// Hosting reaches the hosting cluster; a ControlPlane of type host is reached with it.
	Hosting *rest.Config
	// InCluster selects status.secretRef.inClusterKey (the process runs in a pod of the hosting
	// cluster) rather than .key.
	InCluster bool
}

// Space is a WDS or an ITS found from its ControlPlane.
type Space struct {
	// Role is the role the space was looked up as (TypeWDS or TypeITS).
	Role         string
	ControlPlane ControlPlane
	Config       *rest.Config
	// Secret and Key are where the kubeconfig came from; both empty for a ControlPlane of type
	// host.
	Secret types.NamespacedName
	Key    string
	// Fingerprint identifies the kubeconfig in use (the Secret, the key and its bytes): a
	// rotated Secret gets another one.
	Fingerprint string
}

// Find returns the ControlPlane of the given role (TypeWDS or TypeITS) named name, or, when name
// is "", the only ControlPlane labelled with that role — KubeStellar's rule. A named
// ControlPlane whose role label says another role is an error; one without the label is
// accepted (KubeFlex copies the label from the PostCreateHook that sets it, after creation).
func (f Finder) Find(ctx context.Context, role, name string) (ControlPlane, error) {
	if name != "" {
		u := newControlPlaneObject()
		if err := f.Client.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			if apierrors.IsNotFound(err) {
				return ControlPlane{}, notReady("ControlPlane %q not found", name)
			}
			return ControlPlane{}, fmt.Errorf("reading ControlPlane %q: %w", name, err)
		}
		cp := fromUnstructured(u)
		if cp.Role != "" && cp.Role != role {
			return ControlPlane{}, fmt.Errorf("ControlPlane %q is labelled %s=%s, not %s", name, TypeLabel, cp.Role, role)
		}
		return cp, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ControlPlaneGVK.GroupVersion().WithKind("ControlPlaneList"))
	if err := f.Client.List(ctx, list, client.MatchingLabels{TypeLabel: role}); err != nil {
		return ControlPlane{}, fmt.Errorf("listing ControlPlanes labelled %s=%s: %w", TypeLabel, role, err)
	}
	switch len(list.Items) {
	case 0:
		return ControlPlane{}, notReady("no ControlPlane labelled %s=%s", TypeLabel, role)
	case 1:
		return fromUnstructured(&list.Items[0]), nil
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, list.Items[i].GetName())
	}
	return ControlPlane{}, fmt.Errorf("%d ControlPlanes are labelled %s=%s (%v): name one (--%s-name)", len(names), TypeLabel, role, names, role)
}

// Space finds the ControlPlane (as Find does) and the client config that reaches it: the hosting
// cluster's for type host; otherwise the kubeconfig in the Secret of status.secretRef, under
// inClusterKey in a pod and key outside.
func (f Finder) Space(ctx context.Context, role, name string) (Space, error) {
	cp, err := f.Find(ctx, role, name)
	if err != nil {
		return Space{}, err
	}
	if cp.IsHost() {
		if f.Hosting == nil {
			return Space{}, fmt.Errorf("%s is of type host, and no hosting cluster config was given", cp)
		}
		return Space{Role: role, ControlPlane: cp, Config: rest.CopyConfig(f.Hosting), Fingerprint: "host"}, nil
	}
	ref := cp.SecretRef
	if ref == nil || ref.Name == "" || ref.Namespace == "" {
		return Space{}, notReady("%s has no status.secretRef yet", cp)
	}
	key, keyField := ref.Key, "key"
	if f.InCluster {
		key, keyField = ref.InClusterKey, "inClusterKey"
	}
	if key == "" {
		return Space{}, notReady("%s has no status.secretRef.%s yet", cp, keyField)
	}
	data, err := f.secretData(ctx, cp, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, key)
	if err != nil {
		return Space{}, err
	}
	cfg, err := restConfigFromKubeconfig(data)
	if err != nil {
		return Space{}, fmt.Errorf("%s: the kubeconfig in Secret %s/%s, key %q: %w", cp, ref.Namespace, ref.Name, key, err)
	}
	sum := sha256.Sum256(append([]byte(ref.Namespace+"/"+ref.Name+"/"+key+"\x00"), data...))
	return Space{Role: role, ControlPlane: cp, Config: cfg, Secret: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name},
		Key: key, Fingerprint: hex.EncodeToString(sum[:8])}, nil
}

// secretData reads one key of the Secret nn, named by cp.
func (f Finder) secretData(ctx context.Context, cp ControlPlane, nn types.NamespacedName, key string) ([]byte, error) {
	s := &corev1.Secret{}
	if err := f.Client.Get(ctx, nn, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notReady("Secret %s of %s not found", nn, cp)
		}
		return nil, fmt.Errorf("reading Secret %s of %s: %w", nn, cp, err)
	}
	data := s.Data[key]
	if len(data) == 0 {
		return nil, notReady("Secret %s of %s has no key %q yet", nn, cp, key)
	}
	return data, nil
}

// restConfigFromKubeconfig builds a client config from kubeconfig bytes. A kubeconfig that sets
// no QPS gets client-side rate limiting turned off (QPS -1), as the manager does for its other
// kubeconfigs: the apiserver's priority and fairness limits apply instead.
func restConfigFromKubeconfig(data []byte) (*rest.Config, error) {
	cc, err := clientcmd.NewClientConfigFromBytes(data)
	if err != nil {
		return nil, err
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, err
	}
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg, nil
}
