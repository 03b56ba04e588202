package local

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/config"
)

// SampleObjects returns the embedded samples (config/samples and config/samples/library) in the
// order they are applied: namespaces first, then files in name order with the library before
// the BindingPolicies that use it.
func SampleObjects() ([]*unstructured.Unstructured, error) {
	var files []string
	for _, pattern := range []string{"samples/*.yaml", "samples/library/*.yaml"} {
		f, err := fs.Glob(config.Samples, pattern)
		if err != nil {
			return nil, err
		}
		files = append(files, f...)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := fs.ReadFile(config.Samples, f)
		if err != nil {
			return nil, err
		}
		docs, err := splitYAML(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, doc := range docs {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			objs = append(objs, u)
		}
	}
	rank := func(u *unstructured.Unstructured) int {
		switch u.GetKind() {
		case "Namespace":
			return 0
		case "StatusCollector", "ContentClassifier":
			return 1
		case "BindingPolicy":
			return 3
		}
		return 2
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank(objs[i]) < rank(objs[j]) })
	return objs, nil
}

// ApplySamples server-side applies the embedded samples. Kinds the apiserver does not know (e.g.
// the aggregation-policy kind in a build without it) are skipped with a warning.
func ApplySamples(ctx context.Context, c client.Client, out io.Writer) error {
	objs, err := SampleObjects()
	if err != nil {
		return err
	}
	for _, u := range objs {
		desc := strings.ToLower(u.GetKind()) + "/" + u.GetName()
		if ns := u.GetNamespace(); ns != "" {
			desc += " -n " + ns
		}
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
		if meta.IsNoMatchError(err) {
			fmt.Fprintf(out, "  skipped %s: its kind is not served\n", desc)
			continue
		}
		if err != nil {
			return fmt.Errorf("applying sample %s: %w", desc, err)
		}
		fmt.Fprintf(out, "  applied %s\n", desc)
	}
	return nil
}

// applyWithRetry applies the samples, retrying for a while: right after start the webhooks may
// not be reachable through the apiserver yet.
func applyWithRetry(ctx context.Context, cp *ControlPlane, out io.Writer) error {
	fmt.Fprintln(out, "Applying the samples:")
	var last error
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if last = ApplySamples(ctx, cp.Client, out); last == nil {
			return true, nil
		}
		fmt.Fprintf(out, "  retrying in 2s: %v\n", last)
		return false, nil
	})
	if err != nil && ctx.Err() == nil {
		return last // timed out: the last failure says why
	}
	return nil
}
