// Package offline plays, without a cluster, the apiserver's and kubectl's parts of
// `kubectl apply` for custom resources, so that `statusfold validate` reports what the apiserver
// would: the same checks, in the same order, with the same words.
//
// A Server is built from CRDs (statusfold's are embedded in package config) the way the
// apiserver's CRD handler builds its serving info, from the same k8s.io/apiextensions-apiserver
// code: structural schemas with pruned defaults, the strict request decoder that reports pruned
// fields as unknown (schema-level pruning and ObjectMeta coercion), the schema's defaulting, and
// the custom resource strategy (customresource.NewStrategy), whose validation
// rest.BeforeCreate runs — OpenAPI schema, metadata, list types and the
// `x-kubernetes-validations` CEL rules. Create runs a request body through them in the
// apiserver's order, with mutating admission between decoding and validation, and returns the
// apiserver's *apierrors.StatusError. KubectlMessage prints an error with kubectl's own printer.
//
// The only parts written here rather than called are those the libraries do not export: the
// CRD handler's decoder wrapper (schemaCoercingDecoder, which calls the exported pruning and
// ObjectMeta functions in the same order) and the create handler's wording of a decoding error
// (transformDecodeError). The parity test in test/integration/admission compares the results
// with a real apiserver and kubectl.
package offline
