package main

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/webhooks/offline"
)

// admitFile reads every document of path, each of kind want, as `kubectl apply` would send it to
// the apiserver: through the apiserver's decoding (an unknown or duplicate field is an error that
// names its path), the CRD schema's validation (the apiserver's messages, with field paths) and
// defaults, and the mutating webhook — the first steps of `statusfold validate`. The validating
// webhook's checks are left to the caller. It returns the objects as the webhook decodes them.
func admitFile(ctx context.Context, adm *offline.Admission, path string, want schema.GroupVersionKind) ([]client.Object, error) {
	docs, err := readFile(path)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(docs))
	for _, d := range docs {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(d.json, &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, d.index, err)
		}
		if gvk := tm.GroupVersionKind(); gvk != want {
			return nil, fmt.Errorf("%s: document %d: want a %s %s, got apiVersion %q kind %q",
				path, d.index, want.GroupVersion(), want.Kind, tm.APIVersion, tm.Kind)
		}
		o, ok := adm.Admit(ctx, path, d.json)
		if !ok {
			return nil, fmt.Errorf("%s: document %d: %s is not served offline", path, d.index, want.Kind)
		}
		if o.Err != nil {
			return nil, fmt.Errorf("%s: document %d: %s", path, d.index, offline.Message(o.Err))
		}
		out = append(out, o.Typed)
	}
	return out, nil
}
