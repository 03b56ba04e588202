package wecsim

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Runner drives a Simulator against an apiserver that is both WDS and ITS (or two of them).
type Runner struct {
	// WDS reads Bindings and workload objects; ITS gets ManagedClusters, mailbox namespaces and
	// WorkStatuses. ITS defaults to WDS.
	WDS, ITS client.Client
	// Mapper maps a Binding's group/version/resource to its kind (on the WDS).
	Mapper   meta.RESTMapper
	Scenario Scenario
	// WDSName goes into the label transport.kubestellar.io/originWdsName of every WorkStatus.
	WDSName string
	// Interval is the time between ticks (Run only).
	Interval time.Duration
	// Ticks stops Run after that many ticks; 0 runs until ctx ends.
	Ticks int
	// Log receives one line per change (nil: no log).
	Log io.Writer
	// Now is the clock for the timestamps in reported states (default time.Now).
	Now func() time.Time

	sim *Simulator
}

func (r *Runner) its() client.Client {
	if r.ITS != nil {
		return r.ITS
	}
	return r.WDS
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, "wec-sim: "+format+"\n", args...)
	}
}

// Run steps the simulation every Interval until ctx ends (or Ticks ticks are done). A failing
// step is logged and retried at the next tick; Run returns nil when ctx ends.
func (r *Runner) Run(ctx context.Context) error {
	interval := r.Interval
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for tick := 0; r.Ticks == 0 || tick < r.Ticks; tick++ {
		if err := r.Step(ctx, tick); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.logf("tick %d: %v", tick, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	return nil
}

// Step performs one tick: registers and deregisters WECs, then writes every bound object's
// reported state and deletes the WorkStatuses of pairs that are no longer bound.
func (r *Runner) Step(ctx context.Context, tick int) error {
	if r.sim == nil {
		r.sim = NewSimulator(r.Scenario)
	}
	now := r.now()
	present, err := r.syncWECs(ctx, tick)
	if err != nil {
		return err
	}
	pairs, err := r.boundPairs(ctx, present)
	if err != nil {
		return err
	}
	existing, err := r.listOwn(ctx)
	if err != nil {
		return err
	}
	keep, err := r.reportPairs(ctx, pairs, existing, tick, now)
	if err != nil {
		return err
	}
	return r.deleteStale(ctx, existing, keep)
}

// syncWECs registers the scenario's WECs that are present at tick and deregisters the registered
// ones that are not, and returns the names of the present ones.
func (r *Runner) syncWECs(ctx context.Context, tick int) (map[string]bool, error) {
	var mcs clusterv1.ManagedClusterList
	if err := r.its().List(ctx, &mcs); err != nil {
		return nil, fmt.Errorf("listing ManagedClusters: %w", err)
	}
	registered := make(map[string]*clusterv1.ManagedCluster, len(mcs.Items))
	for i := range mcs.Items {
		registered[mcs.Items[i].Name] = &mcs.Items[i]
	}
	present := map[string]bool{}
	for _, w := range r.Scenario.WECs {
		mc := registered[w.Name]
		if w.Present(tick) {
			present[w.Name] = true
			if err := r.registerWEC(ctx, w, mc); err != nil {
				return nil, err
			}
		} else if mc != nil {
			if err := r.deregisterWEC(ctx, mc, tick); err != nil {
				return nil, err
			}
		}
	}
	return present, nil
}

// reportPairs writes, for each bound (object, WEC) pair whose object exists and is simulated, the
// WEC's reported state at tick as a WorkStatus (existing holds the stored ones), and returns the
// keys of the WorkStatuses written or left as they are.
func (r *Runner) reportPairs(ctx context.Context, pairs []pairKey, existing map[client.ObjectKey]*controlv1alpha1.WorkStatus,
	tick int, now time.Time) (map[client.ObjectKey]bool, error) {
	keep := map[client.ObjectKey]bool{}
	objects := map[string]*Object{}
	for _, pk := range pairs {
		okey := pk.gvr.String() + "/" + pk.namespace + "/" + pk.name
		obj, cached := objects[okey]
		if !cached {
			var err error
			obj, err = r.readObject(ctx, pk)
			if err != nil {
				return nil, err
			}
			objects[okey] = obj
		}
		if obj == nil {
			continue
		}
		rep, ok := r.sim.Observe(*obj, pk.wec, tick, now)
		if !ok {
			continue
		}
		ws := r.workStatus(*obj, pk.wec, rep, now)
		keep[client.ObjectKeyFromObject(ws)] = true
		if err := r.writeWorkStatus(ctx, ws, existing[client.ObjectKeyFromObject(ws)]); err != nil {
			return nil, err
		}
	}
	return keep, nil
}
