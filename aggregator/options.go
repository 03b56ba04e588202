package aggregator

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/rest"

	"github.com/statusfold/statusfold/aggregator/internal/pacing"
	"github.com/statusfold/statusfold/policy/aggregation"
	"github.com/statusfold/statusfold/policy/collector"
	"github.com/statusfold/statusfold/policy/sizebudget"
)

// BindingResolution says who writes the Bindings.
type BindingResolution string

// The binding resolution modes.
const (
	// BindingResolutionInternal: statusfold resolves BindingPolicies into Bindings (the default).
	BindingResolutionInternal BindingResolution = "internal"
	// BindingResolutionExternal: another controller (e.g. KubeStellar's) writes Bindings;
	// statusfold only reads them.
	BindingResolutionExternal BindingResolution = "external"
)

// Defaults of Options.
const (
	DefaultCoalesceDelay = 0
	// DefaultMaxWriteDelay caps the Pacer's delay of the objects controller's writes.
	DefaultMaxWriteDelay = pacing.DefaultPacerMaxDelay
	// PacingOff, as Options.MaxWriteDelay, turns the pacing of writes off.
	PacingOff time.Duration = -1
	// DefaultWorkers is how many workload objects are evaluated in parallel. A worker spends
	// most of an evaluation waiting for the apiserver's answer to its writes: at the load test's
	// full speed 4 workers left a median of 37–39 objects waiting for one, 8 left 9–11
	// (docs/design-notes.md, "Eight workers by default").
	DefaultWorkers        = 8
	DefaultCatalogRefresh = 30 * time.Second
	// DefaultWatchSyncTimeout bounds the wait for a workload resource's first list.
	DefaultWatchSyncTimeout = 10 * time.Second
)

// Options configure the reconciler that Setup adds to a manager.
type Options struct {
	// WDSName is this WDS's name: only WorkStatuses labelled
	// transport.kubestellar.io/originWdsName=WDSName are read. Required.
	WDSName string
	// ITSConfig reaches the ITS (ManagedClusters, WorkStatuses). Nil: the manager's cluster.
	ITSConfig *rest.Config
	// BindingResolution: internal (default) or external.
	BindingResolution BindingResolution
	// CoalesceDelay: events for one object within this delay of its last evaluation cause one
	// evaluation, at the end of the delay. Default 0: an event is evaluated at once, and the
	// events that arrive while an object is being evaluated cause one more evaluation (the work
	// queue holds each object once), so bursts coalesce by themselves under load.
	CoalesceDelay time.Duration
	// MaxWriteDelay caps the adaptive delay between two writes of one workload object's
	// CombinedStatuses and returned status (docs/controller.md, "Pacing writes"): 0 when the
	// apiserver has room, growing up to MaxWriteDelay when its write latency, the objects queue
	// or 429s show pressure. It adds to CoalesceDelay's fixed minimum (the longer wait applies).
	// 0: DefaultMaxWriteDelay (1 s). PacingOff (any negative value): no pacing.
	MaxWriteDelay time.Duration
	// Workers evaluating workload objects in parallel. Default 8.
	Workers int
	// CatalogRefresh is how often discovery is re-read for resources that `"*"` selects.
	// Default 30 s.
	CatalogRefresh time.Duration
	// WatchSyncTimeout bounds how long one evaluation waits for the first list of a workload
	// resource it starts watching; after it, the evaluation fails and is retried with backoff.
	// Default 10 s.
	WatchSyncTimeout time.Duration
	// CompilerOptions and AggregationOptions configure the engines.
	CompilerOptions    []collector.CompilerOption
	AggregationOptions []aggregation.Option
	// Schemas resolves the WDS's published schema of a kind; a returned status is pruned to it
	// before it is written (docs/controller.md, "Schema skew"). Nil: the WDS's /openapi/v3,
	// re-read when it changes, looked at at most once per CatalogRefresh.
	Schemas resolver.SchemaResolver
	// AfterFirstPass, when set, is called once the first pass is done: every object queued by
	// the initial lists and the start's sweep for labelled objects has been evaluated (the sweep
	// done, then the objects queue empty for the first time after the event handlers synced).
	// `statusfold manager` restores its GC target there (StartupGCPercent).
	AfterFirstPass func()
	// VersionRefreshDelay and OwnVersionRefreshDelay: how long a Binding may list an object's
	// previous resourceVersion after an update that cannot change which policies select it, and
	// after statusfold's own status return (docs/controller.md, "Bindings"). 0: the defaults
	// (DefaultVersionRefreshDelay, DefaultOwnVersionRefreshDelay).
	VersionRefreshDelay, OwnVersionRefreshDelay time.Duration
	// WatchSecrets opts Secrets in: without it statusfold never watches or caches a Secret, and a
	// BindingPolicy that selects Secrets gets the condition ResourcesReadable=False
	// (docs/security.md, "Reads").
	WatchSecrets bool

	// SizeBudget is the largest encoded size, in bytes, of a CombinedStatus or of a workload
	// object with its returned status that statusfold writes; over it the content is trimmed
	// (docs/rules.md "Size budget"). 0: DefaultSizeBudget; at least MinSizeBudget.
	SizeBudget int

	// MaxReportedStatusBytes caps the size of one WEC's reported status (a WorkStatus's status,
	// as JSON): a larger one is not decoded nor evaluated; the WEC's rows in the CombinedStatuses
	// say so and the status return counts its state as unknown (docs/rules.md "Reported status
	// size"). 0: DefaultMaxReportedStatusBytes; NoStatusCap (any negative value): no cap.
	MaxReportedStatusBytes int
	// ObjectTimeBudget bounds the wall time of the comprehensions of all the StatusCollectors of
	// one workload object, over all its pairs and WECs, in one evaluation (each collector also has
	// its own budget, collector.WithTimeBudget). 0: DefaultObjectTimeBudget.
	ObjectTimeBudget time.Duration
	// UnfairWECs turns off the fair queuing of the objects controller's work across WECs
	// (docs/controller.md "Fairness across WECs"): the queue is then one FIFO. For comparisons.
	UnfairWECs bool

	// LuaHealthConfigMap names ("namespace/name") a ConfigMap of the WDS in argocd-cm's format whose
	// resource.customizations.health.<group>_<kind> entries are Lua health checks, in front of
	// Argo CD's own (docs/aggregation.md, "Lua health checks"). Empty: Argo CD's checks only.
	LuaHealthConfigMap string
	// ClusterWideWatches watches every workload resource cluster-wide; without it a resource
	// that every clause selecting it limits to named namespaces is watched in those only
	// (docs/security.md, "Reads").
	ClusterWideWatches bool

	// WorkloadWatchTimeout bounds how long one watch of a workload resource's informer stays
	// open: the apiserver authorizes a watch when it opens, so this bounds how long a revoked
	// read access goes unnoticed (docs/security.md, "Read access revoked"). 0:
	// DefaultWorkloadWatchTimeout; else at least 1s (the flag: MinWorkloadWatchTimeout). A
	// streaming list's watch is bounded by it only once its list has arrived.
	WorkloadWatchTimeout time.Duration
}

// Defaults of the status size cap and the object's evaluation budget.
const (
	// DefaultMaxReportedStatusBytes is the default cap on a reported status: 256 KiB
	// (docs/rules.md "Reported status size" gives the reasons).
	DefaultMaxReportedStatusBytes = 256 << 10
	// NoStatusCap, as Options.MaxReportedStatusBytes, turns the cap off.
	NoStatusCap = -1
	// DefaultObjectTimeBudget is twice a collector's default budget.
	DefaultObjectTimeBudget = 2 * collector.DefaultTimeBudget
)

func (o *Options) defaults() error {
	if o.WDSName == "" {
		return errors.New("aggregator: Options.WDSName is required")
	}
	switch o.BindingResolution {
	case "":
		o.BindingResolution = BindingResolutionInternal
	case BindingResolutionInternal, BindingResolutionExternal:
	default:
		return fmt.Errorf("aggregator: binding resolution %q: must be internal or external", o.BindingResolution)
	}
	if o.CoalesceDelay < 0 {
		return fmt.Errorf("aggregator: coalesce delay %s: must not be negative", o.CoalesceDelay)
	}
	if o.MaxWriteDelay == 0 {
		o.MaxWriteDelay = DefaultMaxWriteDelay
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.CatalogRefresh <= 0 {
		o.CatalogRefresh = DefaultCatalogRefresh
	}
	if o.WatchSyncTimeout <= 0 {
		o.WatchSyncTimeout = DefaultWatchSyncTimeout
	}
	if o.VersionRefreshDelay <= 0 {
		o.VersionRefreshDelay = DefaultVersionRefreshDelay
	}
	if o.OwnVersionRefreshDelay <= 0 {
		o.OwnVersionRefreshDelay = DefaultOwnVersionRefreshDelay
	}
	switch {
	case o.SizeBudget == 0:
		o.SizeBudget = DefaultSizeBudget
	case o.SizeBudget < MinSizeBudget:
		return fmt.Errorf("aggregator: size budget %d bytes: must be at least %d", o.SizeBudget, MinSizeBudget)
	}
	if o.MaxReportedStatusBytes == 0 {
		o.MaxReportedStatusBytes = DefaultMaxReportedStatusBytes
	}
	if o.ObjectTimeBudget <= 0 {
		o.ObjectTimeBudget = DefaultObjectTimeBudget
	}
	switch {
	case o.WorkloadWatchTimeout == 0:
		o.WorkloadWatchTimeout = DefaultWorkloadWatchTimeout
	case o.WorkloadWatchTimeout < time.Second:
		return fmt.Errorf("aggregator: workload watch timeout %s: must be at least 1s (a watch's timeout is in whole seconds)", o.WorkloadWatchTimeout)
	}
	if _, err := luaConfigMapKey(o.LuaHealthConfigMap); err != nil {
		return err
	}
	return nil
}

// DefaultVersionRefreshDelay is how long a Binding may list an object's previous resourceVersion
// after an update that cannot change which policies select the object; DefaultOwnVersionRefreshDelay
// the same after statusfold's own write of the object's status and labels (its status return),
// which changes nothing a Binding's consumer delivers.
const (
	DefaultVersionRefreshDelay    = 5 * time.Second
	DefaultOwnVersionRefreshDelay = time.Minute
)

// DefaultWorkloadWatchTimeout is the longest a workload informer's watch stays open before it
// is opened again (and authorized again): client-go's own last 5 to 10 minutes.
// MinWorkloadWatchTimeout is the shortest --workload-watch-timeout: each informer opens a watch
// every 0.75 of it on average. Options take 1s and more (tests).
const (
	DefaultWorkloadWatchTimeout = time.Minute
	MinWorkloadWatchTimeout     = 10 * time.Second
)

// The object size budget (docs/rules.md "Size budget"): by default 1 MiB of JSON, two thirds of
// etcd's default 1.5 MiB request limit, leaving room for managed fields and server-set metadata.
const (
	DefaultSizeBudget = sizebudget.DefaultBytes
	MinSizeBudget     = sizebudget.MinBytes
)
