// Package load is statusfold's load test (docs/performance.md, "Reproducing the figures: `make
// load`"). In one run, on one control plane, it measures what the apiserver alone achieves with
// the fixture's WorkStatuses (maximum write rate, write→watch latency at that rate and at a tenth
// of it, CPU per write, a plain list of every WorkStatus) and, against that baseline, statusfold
// in three phases: L1 (updates paced at a tenth of the maximum rate: write→CombinedStatus and
// write→returned-status p99), L2 (writers as fast as they can: staleness per window and its
// trend, the drain after the writers stop, the apiserver CPU statusfold adds per update) and L3
// (initial sync, peak RSS per WorkStatus). It prints one row per target of that page's verdict
// table and writes a JSON report; the page defines every figure.
//
// `make load` runs TestLoad at the default size (1,000 WECs × 100 objects; -load.measure and
// the other -load flags after -args size it); `go test ./test/load` runs TestLoadSmoke, the
// same phases at a small size, which checks that the report is complete.
package load
