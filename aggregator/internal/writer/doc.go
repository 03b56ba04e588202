// Package writer makes statusfold's writes: every server-side apply under rules.FieldManager
// (Writer), each counted, objects of KubeStellar's group pruned to the schema the apiserver serves
// for their kind and returned statuses to the WDS's published schema (schemaprune.go,
// docs/controller.md "Schema skew"), the writes of workload objects reported to the Pacer. It also
// reads what an object's managed fields say statusfold owns (managedfields.go) and which fields
// an apiserver error names (apierrors.go).
//
// It is layer 3 of the aggregator: it imports internal/rules, internal/pacing, internal/metrics,
// internal/report, client-go and controller-runtime's client.
package writer
