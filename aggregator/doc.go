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
// The objects' writes are paced (Options.MaxWriteDelay, pacer.go): an object written recently
// waits an adaptive delay that is 0 while the apiserver has room.
//
// # Parts
//
// Setup (aggregator.go) wires the parts; each gets only what it uses. The engines of policy/ sit
// behind small interfaces: collectorCompiler, aggregationStates, aggregationPolicies.
//
//	controllers.go   three controller-runtime typed controllers, statusfold_objects (ObjectKey),
//	                 statusfold_policies (policy name), statusfold_kinds (kindKey), each on its
//	                 coalescingQueue (queue.go; the objects' one paced by a Pacer, pacer.go);
//	                 eventSource connects the informers' handlers.
//	handlers.go      Aggregator's event handlers: which keys an event queues; they keep the
//	                 wecIndex, reportCache, destsCache and echo memory (ownWrites) up to date.
//	enqueue.go       queueing in bulk: at start, and for changes that affect many keys.
//	objects.go       objectReconciler: gatherer → combinedStatusWriter and statusReturner side
//	                 by side, one objectInputs per evaluation.
//	inputs.go        gatherer: WDS cache and live reader, catalog, workloadWatches, wecIndex,
//	                 reportCache, prunerCache, inventory labels; alias.go: whether the same
//	                 object is returned under another resource (asked before removing a return).
//	combinedstatus.go  combinedStatusWriter: WDS cache and writer client, collectorCompiler,
//	                 tableStore (tables.go), destsCache, writer.
//	statusreturn.go  statusReturner: aggregationStates, returnStates, returnMemo, destsCache,
//	                 writer, reporter, the gatherer's returnedElsewhere; the decision is
//	                 DecideReturn (decisions.go, pure).
//	policy.go        policyReconciler: binding resolution (ResolveBinding, resolve.go, pure),
//	                 WDS and ITS caches, catalog, watcher, collectorCompiler, writer, reporter.
//	kinds.go         kindsReconciler: WDS cache, collectorCompiler, aggregationPolicies, writer.
//	watches.go       watcher: the informers of workload resources (WDS cache).
//	apply.go         writer: every server-side apply, pruned to served schemas (schemaprune.go);
//	                 the objects' writes reported to the Pacer (sendFor, observe).
//	failures.go      reporter: rate-limited failure logs and Events.
//	match.go         matching shared with `statusfold status`: BoundObjects, BoundIn,
//	                 Destinations, WorkStatusObject, NewestWorkStatus (pure).
//	catalog.go       discovery of the WDS's resources.
//	apierrors.go, managedfields.go, jsoncompare.go  small helpers of the status returner.
package aggregator
