package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubeStellar's controller-manager as its core chart's PostCreateHook kubestellar-controller makes
// it: a Deployment in the WDS ControlPlane's namespace (<wds>-system) of the hosting cluster, its
// container "manager". docs/kubestellar.md says what takeover and giveback change.
const (
	ksDeployment       = "kubestellar-controller-manager"
	ksContainer        = "manager"
	ksControllersFlag  = "--controllers="
	ksBindingOnly      = ksControllersFlag + "binding"
	takeoverFieldOwner = "statusfold-takeover"
	// takeoverArgsAnnotation keeps the container's arguments as they were before takeover, which
	// giveback restores.
	takeoverArgsAnnotation = "statusfold.dev/kubestellar-args-before-takeover"
)

type kubestellarOptions struct {
	wdsName   string
	namespace string
}

// newKubeStellarCommand is `statusfold kubestellar takeover|giveback`: turn KubeStellar's status
// controller off (its controller-manager runs --controllers=binding) and on again.
func newKubeStellarCommand() *cobra.Command {
	o := &kubestellarOptions{}
	cmd := &cobra.Command{
		Use:   "kubestellar",
		Short: "Turn KubeStellar's status controller off (takeover) or back on (giveback) for one WDS",
	}
	cmd.PersistentFlags().StringVar(&o.wdsName, "wds-name", "", "the WDS's ControlPlane (required)")
	cmd.PersistentFlags().StringVar(&o.namespace, "namespace", "", "namespace of KubeStellar's controller-manager in the hosting cluster (default: <wds-name>-system, KubeFlex's)")
	_ = cmd.MarkPersistentFlagRequired("wds-name")
	for _, sub := range []struct {
		use, short string
		do         func(context.Context, client.Client, types.NamespacedName) (string, error)
	}{
		{"takeover", "Run KubeStellar's controller-manager with --controllers=binding only, remembering its arguments", takeover},
		{"giveback", "Restore the arguments KubeStellar's controller-manager had before takeover", giveback},
	} {
		cmd.AddCommand(&cobra.Command{
			Use: sub.use, Short: sub.short, Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, err := hostingClient()
				if err != nil {
					return err
				}
				msg, err := sub.do(cmd.Context(), c, o.deployment())
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), msg)
				return err
			},
		})
	}
	return cmd
}

func (o *kubestellarOptions) deployment() types.NamespacedName {
	ns := o.namespace
	if ns == "" {
		ns = o.wdsName + "-system"
	}
	return types.NamespacedName{Namespace: ns, Name: ksDeployment}
}

func hostingClient() (client.Client, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("the hosting cluster: %w", err)
	}
	return client.New(cfg, client.Options{})
}

// managerArgs reads the Deployment and its manager container's arguments.
func managerArgs(ctx context.Context, c client.Client, nn types.NamespacedName) (*appsv1.Deployment, []string, error) {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, nn, d); err != nil {
		return nil, nil, fmt.Errorf("KubeStellar's controller-manager: %w", err)
	}
	for _, ctr := range d.Spec.Template.Spec.Containers {
		if ctr.Name == ksContainer {
			return d, ctr.Args, nil
		}
	}
	return nil, nil, fmt.Errorf("Deployment %s has no container %q", nn, ksContainer)
}

// takeover sets --controllers=binding on KubeStellar's controller-manager (replacing a
// --controllers flag it has) and keeps its arguments before that in an annotation. Run again, it
// changes nothing.
func takeover(ctx context.Context, c client.Client, nn types.NamespacedName) (string, error) {
	d, args, err := managerArgs(ctx, c, nn)
	if err != nil {
		return "", err
	}
	before, taken := d.Annotations[takeoverArgsAnnotation]
	if !taken {
		b, _ := json.Marshal(args)
		before = string(b)
	}
	want := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return strings.HasPrefix(a, ksControllersFlag) })
	want = append(want, ksBindingOnly)
	if taken && slices.Equal(args, want) {
		return fmt.Sprintf("deployment %s already runs %s", nn, ksBindingOnly), nil
	}
	return fmt.Sprintf("deployment %s now runs %s (its status controller is off)", nn, ksBindingOnly),
		applyManagerArgs(ctx, c, nn, want, before)
}

// giveback restores the arguments kept by takeover and drops the annotation.
func giveback(ctx context.Context, c client.Client, nn types.NamespacedName) (string, error) {
	d, _, err := managerArgs(ctx, c, nn)
	if err != nil {
		return "", err
	}
	before, taken := d.Annotations[takeoverArgsAnnotation]
	if !taken {
		return fmt.Sprintf("deployment %s was not taken over: nothing to give back", nn), nil
	}
	var args []string
	if err := json.Unmarshal([]byte(before), &args); err != nil {
		return "", fmt.Errorf("annotation %s of %s: %w", takeoverArgsAnnotation, nn, err)
	}
	return fmt.Sprintf("deployment %s has its arguments back (its status controller runs again)", nn),
		applyManagerArgs(ctx, c, nn, args, "")
}

// applyManagerArgs sets the manager container's arguments, and the annotation (none when ""),
// with a server-side apply under statusfold's own field owner, forced: the arguments change
// owner, so a later apply of other arguments by KubeFlex's field owner (which does not force)
// conflicts instead of silently undoing the change (docs/kubestellar.md).
func applyManagerArgs(ctx context.Context, c client.Client, nn types.NamespacedName, args []string, annotation string) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace(nn.Namespace)
	u.SetName(nn.Name)
	if annotation != "" {
		u.SetAnnotations(map[string]string{takeoverArgsAnnotation: annotation})
	}
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": ksContainer, "args": anyArgs}},
		"spec", "template", "spec", "containers")
	return c.Patch(ctx, u, client.Apply, client.FieldOwner(takeoverFieldOwner), client.ForceOwnership)
}
