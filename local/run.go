package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/config"
	"github.com/statusfold/statusfold/wecsim"
)

// FieldManager is the server-side apply field manager of the samples statusfold local applies.
const FieldManager = "statusfold-local"

// ReadyLine is printed once everything is up; scripts and the end-to-end test wait for it.
const ReadyLine = "statusfold local is ready"

// ManagerFunc runs statusfold's controllers and webhooks against the control plane until ctx
// ends; it calls ready once they serve.
type ManagerFunc func(ctx context.Context, cp *ControlPlane, ready func()) error

// Options configures Run.
type Options struct {
	ControlPlaneOptions
	// Manager runs the controller manager in-process; nil runs none (Run says so).
	Manager ManagerFunc
	// Demo applies the embedded samples and runs simulated WECs.
	Demo bool
	// WECs, Seed and Interval configure the simulated WECs (defaults 5, 1, 1s).
	WECs     int
	Seed     int64
	Interval time.Duration
	// WDSName is this WDS's name in WorkStatus labels (default "wds1").
	WDSName string
}

// Run is `statusfold local`: it starts the control plane, the manager and (with Demo) the
// samples and simulated WECs, prints how to reach them, and keeps everything running until ctx
// ends; then it stops all of it, waiting for every process to exit.
func Run(ctx context.Context, opts Options) (err error) {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	opts.Out = out
	cp, err := StartControlPlane(ctx, opts.ControlPlaneOptions)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	failed := make(chan error, 2)
	defer func() {
		cancel()
		waited := make(chan struct{})
		go func() { wg.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(30 * time.Second):
			fmt.Fprintln(out, "warning: the manager did not stop within 30s")
		}
		done := Progress(out, "stopping kube-apiserver and etcd")
		stopErr := cp.Stop()
		done(stopErr == nil)
		if stopErr == nil {
			fmt.Fprintln(out, "statusfold local stopped")
		}
		err = errors.Join(err, stopErr)
	}()

	fmt.Fprintf(out, "Control plane %s at %s (data in %s)\n", K8sVersion, cp.APIServerURL(), cp.DataDir)
	if opts.Manager != nil {
		ready := make(chan struct{})
		var once sync.Once
		wg.Go(func() {
			if err := opts.Manager(runCtx, cp, func() { once.Do(func() { close(ready) }) }); err != nil && runCtx.Err() == nil {
				failed <- fmt.Errorf("manager: %w", err)
			}
		})
		done := Progress(out, "waiting for the statusfold controller and webhooks")
		select {
		case <-ready:
			done(true)
		case err := <-failed:
			done(false)
			return err
		case <-ctx.Done():
			done(false)
			return nil
		}
	} else {
		fmt.Fprintln(out, "warning: this build has no statusfold controller; only the control plane and CRDs are running")
	}

	if opts.Demo {
		if err := applyWithRetry(ctx, cp, out); err != nil {
			return err
		}
		r := &wecsim.Runner{
			WDS: cp.Client, Mapper: cp.RESTMapper,
			Scenario: wecsim.NewScenario(orDefault(opts.Seed, 1), int(orDefault(int64(opts.WECs), 5))),
			WDSName:  orString(opts.WDSName, "wds1"), Interval: opts.Interval, Log: out,
		}
		describeScenario(out, r.Scenario)
		wg.Go(func() { _ = r.Run(runCtx) })
	}
	fmt.Fprintf(out, "\nexport KUBECONFIG=%s\n", cp.Kubeconfig)
	fmt.Fprintf(out, "kubectl is %s\n", cp.KubectlPath)
	if opts.Demo {
		fmt.Fprintln(out, "Try:  kubectl get combinedstatuses -n demo")
		fmt.Fprintln(out, "      statusfold status deployment/nginx -n demo   (as a kubectl plugin: kubectl statusfold status …)")
	}
	fmt.Fprintf(out, "%s; press Ctrl-C to stop.\n", ReadyLine)

	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\nstopping…")
		return nil
	case err := <-failed:
		return err
	}
}

func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

func orString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func describeScenario(out io.Writer, sc wecsim.Scenario) {
	fmt.Fprintf(out, "Simulated WECs (seed %d):\n", sc.Seed)
	for _, w := range sc.WECs {
		extra := ""
		switch w.Role {
		case wecsim.RoleJoining:
			extra = fmt.Sprintf(", joins at tick %d", w.JoinTick)
		case wecsim.RoleLeaving:
			extra = fmt.Sprintf(", leaves at tick %d", w.LeaveTick)
		case wecsim.RoleLagging:
			extra = fmt.Sprintf(", %d ticks behind", sc.LagTicks)
		}
		fmt.Fprintf(out, "  %-6s %-8s region=%-8s speed=%d%s\n", w.Name, w.Role, w.Labels[wecsim.LabelRegion], w.Speed, extra)
	}
}

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
