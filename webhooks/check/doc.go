// Package check runs statusfold's admission checks (docs/rules.md "Admission") on StatusCollector,
// ContentClassifier, BindingPolicy and aggregation-policy objects and returns field errors plus
// warnings. The validating webhooks (package webhooks) and `statusfold validate` both call a
// Checker, so users see the same messages online and offline.
//
// A Checker combines the pure engines — the collector compiler (policy/collector), the
// ContentClassifier rules (policy/classifier) and the BindingPolicy shape rules
// (api/control/v1alpha1/validation) — with three optional lookups that make its warnings richer:
//
//   - Collectors: the StatusCollectors a BindingPolicy names (missing ones get a warning);
//   - Mapper: a RESTMapper, to warn about resources that are not served and to find the kind of
//     each resource a BindingPolicy clause names;
//   - Schemas: OpenAPI schemas of kinds, for the schema-aware checks: a ContentClassifier pointer
//     that names a path the resource's schema lacks, and a collector expression that does not
//     type-check with `obj` typed by the resource's schema and `returned.status` by its status
//     schema ("collector "ready-count": spec.combinedFields[0].subject: no such field
//     'avaliableReplicas' in apps/v1 Deployment .status").
//
// Errors are what the apiserver would reject; warnings never are. A lookup that fails (the
// apiserver is slow, a schema is missing) costs a warning at most, never a rejection.
package check
