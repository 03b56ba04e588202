// Package hostile holds statusfold's hostile-input corpus: StatusCollectors, ContentClassifiers,
// aggregation policies and reported statuses written to break the engines — deep nesting, huge
// expressions, cost bombs, invalid UTF-8, unknown functions, wrong types, giant and deeply nested
// statuses, NaN and infinities. Every case is a YAML document under testdata/, expanded by
// text/template first (functions repeat, join, nest, seq) so that huge inputs stay small on disk;
// `!!binary` scalars carry bytes that are not UTF-8.
//
// One table-driven test runs the corpus through the pure engines: each case is either rejected
// with the field errors it names, or evaluated without a panic into a result that obeys the
// CombinedStatus invariants (JSON-encodable, at most `limit` rows, at most 20 row errors, one cell
// per column).
//
// TestEntryPoints runs the StatusCollectors, aggregation policies and reported statuses of the
// corpus through the entry points a user reaches them by: the admission webhooks of a `statusfold
// manager` child process called over TLS by a real kube-apiserver, that manager's controllers (the
// accepted objects applied, the statuses written as WorkStatuses), and `statusfold validate`,
// `eval` and `aggregate`. Each is refused as the corpus says, or ends within twice its time limit
// with the process's resident memory at most 256 MiB above its baseline; the log ends with the
// worst time and memory per entry point. `-args -hostile.entry=REGEXP` reruns some cases.
package hostile
