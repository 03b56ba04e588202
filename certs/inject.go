package certs

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// inject merges own (this replica's bundle) with the CAs of the Secret and of each named
// configuration (mergeBundles) and writes the result into every webhook of the configuration.
// Nothing that has not expired is dropped: a replica that has not seen a CA rotation yet keeps
// the new CA that another replica injected. A Secret that cannot be read is reported, and the
// configurations still get the merge of what they hold and own.
func (r *Rotator) inject(ctx context.Context, own []byte) error {
	logger := log.FromContext(ctx).WithName("cert-rotator")
	stored, err := r.storedBundle(ctx)
	errs := []error{err}
	for _, t := range []struct {
		kind  string
		names []string
	}{
		{"ValidatingWebhookConfiguration", r.opts.ValidatingWebhookConfigurations},
		{"MutatingWebhookConfiguration", r.opts.MutatingWebhookConfigurations},
	} {
		for _, name := range t.names {
			errs = append(errs, r.injectInto(ctx, logger.WithValues("kind", t.kind, "name", name), t.kind, name, stored, own))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("certs: injecting the CA bundle: %w", err)
	}
	return nil
}

// storedBundle is the Secret's ca.crt (nil in memory mode or when there is no Secret yet).
func (r *Rotator) storedBundle(ctx context.Context) ([]byte, error) {
	if r.opts.Namespace == "" {
		return nil, nil
	}
	secret := &corev1.Secret{}
	err := r.c.Get(ctx, client.ObjectKey{Namespace: r.opts.Namespace, Name: r.opts.SecretName}, secret)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", r.opts.Namespace, r.opts.SecretName, err)
	}
	return secret.Data[KeyCACert], nil
}

// injectInto sets the merge of stored, own and the caBundles the configuration's webhooks hold
// as the caBundle of every webhook of one configuration, updating it only when that changes
// something; an update that lost a race with another writer (another replica, kubectl apply) is
// redone on a fresh read (retry.RetryOnConflict). A missing configuration is not an error: it
// gets the bundle at a later check.
func (r *Rotator) injectInto(ctx context.Context, logger logr.Logger, kind, name string, stored, own []byte) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind(kind))
		c := r.c
		if r.opts.ConfigurationsClient != nil {
			c = r.opts.ConfigurationsClient
		}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			return client.IgnoreNotFound(err)
		}
		webhooks, _, err := unstructured.NestedSlice(u.Object, "webhooks")
		if err != nil {
			return err
		}
		bundles := append([][]byte{stored}, heldBundles(logger, webhooks)...)
		merged := mergeBundles(r.opts.Now(), logger, append(bundles, own)...)
		if !setBundles(webhooks, base64.StdEncoding.EncodeToString(merged)) {
			return nil
		}
		if err := unstructured.SetNestedSlice(u.Object, webhooks, "webhooks"); err != nil {
			return err
		}
		return c.Update(ctx, u)
	})
}

// heldBundles are the decoded caBundles of webhooks (one that is not base64 is skipped with a
// log line).
func heldBundles(logger logr.Logger, webhooks []any) [][]byte {
	var out [][]byte
	for _, w := range webhooks {
		wm, _ := w.(map[string]any)
		cc, _ := wm["clientConfig"].(map[string]any)
		s, _ := cc["caBundle"].(string)
		if s == "" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			logger.Info("skipping a caBundle that is not base64", "webhook", wm["name"], "error", err.Error())
			continue
		}
		out = append(out, b)
	}
	return out
}

// setBundles sets encoded as the caBundle of every webhook, and says whether one changed.
func setBundles(webhooks []any, encoded string) bool {
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
	return changed
}
