// Package aggregator is statusfold's reconciler: the thin controller layer over the pure engines
// in policy/. It
//
//   - resolves BindingPolicies into Bindings (docs/rules.md "Bindings"), unless told that another controller
//     (e.g. KubeStellar's) writes them;
//   - watches the WorkStatus objects of its WDS in the ITS and prunes them with the
//     ContentClassifiers (docs/rules.md "ContentClassifier");
//   - keeps one CombinedStatus per (workload object, BindingPolicy) pair that references
//     collectors, evaluated incrementally by the collector engine (docs/rules.md "CombinedStatus");
//   - returns reported state into the workload object's own `.status` — a copy for one WEC, an
//     aggregate by the Rego engine for several — and maintains `kubestellar.io/executing-count`
//     (docs/rules.md "Status return");
//   - reports problems of StatusCollectors, ContentClassifiers and BindingPolicies in their status.
//
// Entry points. A process that owns its manager calls Run; one that builds its own manager (the
// local mode, tests) calls Setup and then starts the manager:
//
//	err := aggregator.Run(ctx, aggregator.Config{WDS: wdsCfg, Options: aggregator.Options{WDSName: "wds1"}})
//
//	mgr, agg, err := aggregator.NewManager(cfg) // the manager of Run, not started
//
//	mgr, _ := ctrl.NewManager(wdsCfg, ctrl.Options{Scheme: scheme.New()})
//	agg, err := aggregator.Setup(mgr, aggregator.Options{WDSName: "wds1"})
//	err = mgr.Start(ctx)
//
// Every write is a server-side apply under the field manager FieldManager, so clearing what
// statusfold returned removes only statusfold's fields. Work is keyed by workload object and
// coalesced: events arriving within Options.CoalesceDelay of each other cause one evaluation.
// The objects' writes are paced (Options.MaxWriteDelay, internal/pacing): an object written
// recently waits an adaptive delay that is 0 while the apiserver has room.
//
// # Packages
//
// The reconciler is a set of packages under internal/, one responsibility each. Setup (setup.go)
// is the only place that knows them all: it builds each part from its own dependencies (a Config
// and New, or a constructor), and adds the three controllers to the manager. The engines of
// policy/ sit behind small interfaces declared where they are used (collectorCompiler in combined
// and policies, aggregationStates in statusreturn, aggregationPolicies in kinds). A package
// imports only packages of lower layers; layers_test.go holds this map as data and enforces it.
//
//	layer 0  internal/rules         pure rules: ObjectKey, BoundObjects, Destinations, WorkStatusObject,
//	                                ResolveBinding, DecideReturn, labels and field manager, event predicates
//	         internal/testutil      WorkStatus builders shared by tests (tests only)
//	layer 1  internal/pacing        Pacer, CoalescingQueue and FairQueue, generic over the key
//	         internal/echo          OwnWrites: the echoes of statusfold's own writes
//	         internal/resources     Catalog (discovery) and Watcher (informers of workload resources)
//	         internal/itscache      the ITS cache: streaming WorkStatus lists, transform, WECIndex
//	         internal/index         the WDS cache's field indexes
//	layer 2  internal/metrics       statusfold's Prometheus metrics
//	         internal/report        rate-limited failure logs and Events
//	layer 3  internal/writer        every server-side apply, pruned to served schemas
//	         internal/inputs        Gatherer: one evaluation's inputs, and what its consumers share
//	         internal/controllers   typed controllers, their sources and error reports
//	         internal/luaconfig     statusfold_luahealth: the user's Lua health checks into the engine
//	layer 4  internal/inputs/inputstest  random input sequences for the consumers' tests (tests only)
//	layer 5  internal/combined      CombinedStatus writer and its Tables
//	         internal/statusreturn  status returner and its States
//	layer 6  internal/objects       statusfold_objects: combined and statusreturn side by side
//	         internal/policies      statusfold_policies: binding resolution
//	         internal/kinds         statusfold_kinds: the status of our own kinds
//	layer 7  internal/fanout        event handlers: which keys an event queues; bulk queueing
//	layer 8  aggregator             Options, Config, Run, NewManager, Setup; the rules and the Pacer
//	                                under their names here (rules.go, pacing.go); GC and watch-list
//	                                settings of the process (gcpercent.go, watchlist.go)
package aggregator
