// Package load is statusfold's load test: it measures, in one run on one machine, what the
// apiserver alone achieves (write→watch-event latency and the maximum write rate of a plain client
// writing WorkStatus-sized objects) and what statusfold achieves on top of it (WorkStatus write →
// CombinedStatus / returned status latency, sustained update rate, writes per update, CPU and
// memory of the manager), and reports the ratios between the two.
//
// `make load` runs it at the default size (1,000 WECs × 100 objects); `go test ./test/load` runs a
// small smoke that fits in `make test`. Flags (after -args) size the run: -load.wecs,
// -load.objects, -load.updates, -load.rate, -load.workers, -load.report.
package load
