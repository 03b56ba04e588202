package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

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
	r := newRun(ctx, cp, out)
	defer func() { err = errors.Join(err, r.stop()) }()

	fmt.Fprintf(out, "Control plane %s at %s (data in %s)\n", K8sVersion, cp.APIServerURL(), cp.DataDir)
	if opts.Manager != nil {
		if ready, err := r.startManager(ctx, opts.Manager); !ready {
			return err
		}
	} else {
		fmt.Fprintln(out, "warning: this build has no statusfold controller; only the control plane and CRDs are running")
	}
	if opts.Demo {
		if err := r.startDemo(ctx, opts); err != nil {
			return err
		}
	}
	printReady(out, cp, opts.Demo)

	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\nstopping…")
		return nil
	case err := <-r.failed:
		return err
	}
}

// localRun is what one Run keeps going in the background: the control plane, and the manager
// and the simulated WECs, which run until stop, not until Run's context ends.
type localRun struct {
	out    io.Writer
	cp     *ControlPlane
	ctx    context.Context // the background work's: not cancelled with Run's context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	failed chan error // a background failure that ends Run
}

// newRun is the localRun of the control plane cp started by Run with ctx, printing to out.
func newRun(ctx context.Context, cp *ControlPlane, out io.Writer) *localRun {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &localRun{out: out, cp: cp, ctx: runCtx, cancel: cancel, failed: make(chan error, 2)}
}

// stop ends the background work, waiting up to 30s for it, then stops the control plane, waiting
// for every process to exit; it returns what stopping the control plane failed with.
func (r *localRun) stop() error {
	r.cancel()
	waited := make(chan struct{})
	go func() { r.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		fmt.Fprintln(r.out, "warning: the manager did not stop within 30s")
	}
	done := Progress(r.out, "stopping kube-apiserver and etcd")
	stopErr := r.cp.Stop()
	done(stopErr == nil)
	if stopErr == nil {
		fmt.Fprintln(r.out, "statusfold local stopped")
	}
	return stopErr
}

// startManager starts manager in the background and waits until it serves. It returns false when
// it does not get there: with the manager's error, or with nil when ctx ended first.
func (r *localRun) startManager(ctx context.Context, manager ManagerFunc) (ready bool, err error) {
	readyCh := make(chan struct{})
	var once sync.Once
	r.wg.Go(func() {
		if err := manager(r.ctx, r.cp, func() { once.Do(func() { close(readyCh) }) }); err != nil && r.ctx.Err() == nil {
			r.failed <- fmt.Errorf("manager: %w", err)
		}
	})
	done := Progress(r.out, "waiting for the statusfold controller and webhooks")
	select {
	case <-readyCh:
		done(true)
		return true, nil
	case err := <-r.failed:
		done(false)
		return false, err
	case <-ctx.Done():
		done(false)
		return false, nil
	}
}

// startDemo applies the samples and starts the simulated WECs of opts in the background.
func (r *localRun) startDemo(ctx context.Context, opts Options) error {
	if err := applyWithRetry(ctx, r.cp, r.out); err != nil {
		return err
	}
	sim := &wecsim.Runner{
		WDS: r.cp.Client, Mapper: r.cp.RESTMapper,
		Scenario: wecsim.NewScenario(orDefault(opts.Seed, 1), int(orDefault(int64(opts.WECs), 5))),
		WDSName:  orString(opts.WDSName, "wds1"), Interval: opts.Interval, Log: r.out,
	}
	describeScenario(r.out, sim.Scenario)
	r.wg.Go(func() { _ = sim.Run(r.ctx) })
	return nil
}

// printReady prints how to reach the control plane cp (and, with demo, what to try), then
// ReadyLine.
func printReady(out io.Writer, cp *ControlPlane, demo bool) {
	fmt.Fprintf(out, "\nexport KUBECONFIG=%s\n", cp.Kubeconfig)
	fmt.Fprintf(out, "kubectl is %s\n", cp.KubectlPath)
	if demo {
		fmt.Fprintln(out, "Try:  kubectl get combinedstatuses -n demo")
		fmt.Fprintln(out, "      statusfold status deployment/nginx -n demo   (as a kubectl plugin: kubectl statusfold status …)")
	}
	fmt.Fprintf(out, "%s; press Ctrl-C to stop.\n", ReadyLine)
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

// describeScenario prints the simulated WECs of sc: name, role, region, speed, and when a WEC
// joins or leaves or how far behind it lags.
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
