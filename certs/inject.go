package certs

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// inject puts bundle into every webhook of the named configurations.
func (r *Rotator) inject(ctx context.Context, bundle []byte) error {
	var errs []error
	for _, t := range []struct {
		kind  string
		names []string
	}{
		{"ValidatingWebhookConfiguration", r.opts.ValidatingWebhookConfigurations},
		{"MutatingWebhookConfiguration", r.opts.MutatingWebhookConfigurations},
	} {
		for _, name := range t.names {
			errs = append(errs, r.injectInto(ctx, t.kind, name, bundle))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("certs: injecting the CA bundle: %w", err)
	}
	return nil
}

// injectInto sets bundle as the caBundle of every webhook of one configuration, updating it
// when something changed; an update that lost a race with another writer (another replica,
// kubectl apply) is redone on a fresh read (retry.RetryOnConflict). A missing configuration is
// not an error: it gets the bundle at a later check.
func (r *Rotator) injectInto(ctx context.Context, kind, name string, bundle []byte) error {
	encoded := base64.StdEncoding.EncodeToString(bundle)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind(kind))
		if err := r.c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			return client.IgnoreNotFound(err)
		}
		webhooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
		if err != nil {
			return err
		}
		changed := false
		for _, w := range webhooks {
			wm, ok := w.(map[string]any)
			if !ok {
				continue
			}
			cc, _ := wm["clientConfig"].(map[string]any)
			if cc == nil {
				cc = map[string]any{}
				wm["clientConfig"] = cc
			}
			if cc["caBundle"] != encoded {
				cc["caBundle"], changed = encoded, true
			}
		}
		if !changed {
			return nil
		}
		if err := unstructured.SetNestedSlice(u.Object, webhooks, "webhooks"); err != nil {
			return err
		}
		return r.c.Update(ctx, u)
	})
}
