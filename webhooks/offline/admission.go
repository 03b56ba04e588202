package offline

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	admissionerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
	apischeme "github.com/statusfold/statusfold/api/scheme"
	"github.com/statusfold/statusfold/config"
	"github.com/statusfold/statusfold/webhooks"
	"github.com/statusfold/statusfold/webhooks/check"
)

// admittedKinds are the kinds that statusfold's webhooks admit: the Go type each decodes into,
// its validating webhook's name, and its mutating webhook, if any.
var admittedKinds = map[schema.GroupVersionKind]struct {
	new      func() client.Object
	webhook  string
	mutating string
}{
	controlv1alpha1.GroupVersion.WithKind("StatusCollector"): {func() client.Object { return &controlv1alpha1.StatusCollector{} },
		webhooks.NameValidateStatusCollector, webhooks.NameMutateStatusCollector},
	controlv1alpha1.GroupVersion.WithKind("ContentClassifier"): {func() client.Object { return &controlv1alpha1.ContentClassifier{} },
		webhooks.NameValidateContentClassifier, ""},
	controlv1alpha1.GroupVersion.WithKind("BindingPolicy"): {func() client.Object { return &controlv1alpha1.BindingPolicy{} },
		webhooks.NameValidateBindingPolicy, ""},
	policyv1alpha1.GroupVersion.WithKind("AggregationPolicy"): {func() client.Object { return &policyv1alpha1.AggregationPolicy{} },
		webhooks.NameValidateAggregationPolicy, ""},
}

// Admission is what `kubectl apply` of one of statusfold's kinds goes through in a cluster
// where statusfold is installed: the apiserver's create path for the CRD (embedded in package
// config) with statusfold's mutating webhook, then its validating webhook.
type Admission struct {
	srv      *Server
	mutating map[string]*admission.Webhook
}

// NewAdmission builds the Admission of the CRDs built into the binary.
func NewAdmission() (*Admission, error) {
	crds, err := LoadCRDs(config.CRDs, "crd/bases/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("embedded CRDs: %w", err)
	}
	srv, err := New(crds...)
	if err != nil {
		return nil, err
	}
	return &Admission{srv: srv, mutating: map[string]*admission.Webhook{
		webhooks.NameMutateStatusCollector: webhooks.NewStatusCollectorDefaulting(apischeme.New()),
	}}, nil
}

// Object is one object on its way through admission.
type Object struct {
	GVK  schema.GroupVersionKind
	Name string
	// Typed is the object as the validating webhook decodes it; nil when the apiserver
	// rejected it before.
	Typed client.Object
	// Warnings are what kubectl prints as "Warning: ...".
	Warnings []string
	// Err is the error the create request fails with (an *apierrors.StatusError), if it does.
	Err error

	webhook string
}

// Admit runs `kubectl apply -f SOURCE` of one document (JSON) up to validating admission:
// kubectl's part (Server.Apply), then the apiserver's decoding, the schema's defaults, the
// mutating webhook and the schema's validation (Server.Create). It returns false for a document
// of another kind than statusfold's. A document that kubectl cannot decode at all (not an
// object, no kind, a metadata that is not ObjectMeta) fails `kubectl apply` whatever it was
// meant to be: Admit returns it with kubectl's error (and the GVK and name when it is one of
// statusfold's kinds, else an empty GVK).
func (a *Admission) Admit(ctx context.Context, source string, body []byte) (*Object, bool) {
	// Only apiVersion and kind decide whether the document is ours: a malformed metadata (not an
	// object, say) is an error that kubectl reports, not a reason to skip the document.
	var head metav1.TypeMeta
	headErr := json.Unmarshal(body, &head)
	gvk := head.GroupVersionKind()
	kind, ours := admittedKinds[gvk]
	ours = ours && headErr == nil && a.srv.Serves(gvk)
	o := &Object{}
	if ours {
		o.GVK, o.webhook = gvk, kind.webhook
		var named struct {
			Metadata struct {
				Name any `json:"name"`
			} `json:"metadata"`
		}
		if json.Unmarshal(body, &named) == nil {
			o.Name, _ = named.Metadata.Name.(string)
		}
	}
	if _, _, err := kubectlDecode(source, body); err != nil {
		o.Err = err
		return o, true
	}
	if !ours {
		return nil, false
	}
	var mutate MutateFunc
	if wh := a.mutating[kind.mutating]; wh != nil {
		mutate = mutateWith(wh, kind.mutating)
	}
	u, warnings, err := a.srv.Apply(ctx, source, body, mutate)
	o.Warnings, o.Err = warnings, err
	if err != nil {
		return o, true
	}
	o.Name = u.GetName()
	// What the validating webhook decodes (controller-runtime's decoder is not strict).
	typed := kind.new()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		o.Err = admissionerrors.ToStatusErr(kind.webhook, &metav1.Status{Code: http.StatusBadRequest, Message: err.Error()})
		return o, true
	}
	o.Typed = typed
	return o, true
}

// Check runs the validating webhook's checks with c on an object that Admit let through, and
// sets Err to the apiserver's error when the webhook would deny it.
func (o *Object) Check(ctx context.Context, c *check.Checker) {
	if o.Err != nil || o.Typed == nil {
		return
	}
	var errs field.ErrorList
	var warnings []string
	switch obj := o.Typed.(type) {
	case *controlv1alpha1.StatusCollector:
		errs, warnings = c.StatusCollector(ctx, obj)
	case *controlv1alpha1.ContentClassifier:
		errs, warnings = c.ContentClassifier(obj)
	case *controlv1alpha1.BindingPolicy:
		errs, warnings = c.BindingPolicy(ctx, obj)
	case *policyv1alpha1.AggregationPolicy:
		errs, warnings = c.AggregationPolicy(ctx, obj)
	}
	o.Warnings = append(o.Warnings, warnings...)
	if len(errs) > 0 {
		o.Err = WebhookDenial(o.webhook, o.GVK.GroupKind(), o.Name, errs)
	}
}

// mutateWith calls a mutating webhook's handler as the apiserver calls it on create, and
// applies the JSON patch it answers with as the apiserver does (evanphx/json-patch v4); a
// denial is the apiserver's error.
func mutateWith(wh *admission.Webhook, name string) MutateFunc {
	return func(ctx context.Context, u *unstructured.Unstructured) error {
		raw, err := u.MarshalJSON()
		if err != nil {
			return err
		}
		gvk := u.GroupVersionKind()
		resp := wh.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Name: u.GetName(), Namespace: u.GetNamespace(),
			Kind:   metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
			Object: runtime.RawExtension{Raw: raw},
		}})
		if !resp.Allowed {
			return admissionerrors.ToStatusErr(name, resp.Result)
		}
		if len(resp.Patches) == 0 {
			return nil
		}
		ops, err := json.Marshal(resp.Patches)
		if err != nil {
			return err
		}
		patch, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			return err
		}
		patched, err := patch.Apply(raw)
		if err != nil {
			return err
		}
		return u.UnmarshalJSON(patched)
	}
}
