// Package wecsim simulates workload execution clusters (WECs) for demos, end-to-end and load tests.
//
// A Scenario (deterministic for a seed) gives every simulated WEC labels and a role: rolling out
// at its own speed, lagging behind new generations, failing (a Deployment that ends with
// ProgressDeadlineExceeded, a Job that exceeds its backoff limit), joining late or leaving. A
// Simulator turns the scenario into reported states tick by tick, with no I/O. A Runner is the
// adapter to an ITS/WDS apiserver: it registers the WECs as OCM ManagedClusters with mailbox
// namespaces, reads Bindings to learn which workload objects each WEC runs, and writes WorkStatus
// objects the way KubeStellar's WEC-side agent does.
//
//	sc := wecsim.NewScenario(seed, 5)
//	r := &wecsim.Runner{WDS: c, Mapper: mapper, Scenario: sc, WDSName: "wds1", Interval: time.Second}
//	err := r.Run(ctx)
package wecsim
