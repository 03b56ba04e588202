// Package offline plays, without a cluster, the apiserver's and kubectl's parts of
// `kubectl apply` for custom resources, so that `statusfold validate` reports what the apiserver
// would: the same checks, in the same order, with the same words.
//
// A Server is built from CRDs (statusfold's are embedded in package config) the way the
// apiserver's CRD handler builds its serving info, from the same k8s.io/apiextensions-apiserver
// code: structural schemas with pruned defaults, the strict request decoder that reports pruned
// fields as unknown (schema-level pruning and ObjectMeta coercion), the schema's defaulting, and
// the custom resource strategy's validation, which rest.BeforeCreate runs — OpenAPI schema,
// object metadata, list types and the `x-kubernetes-validations` CEL rules. Apply first does
// what kubectl does before its create request (k8s.io/kubectl/pkg/util for the
// last-applied-configuration annotation, client-go's request builder for the lookup); Create
// runs a request body through the apiserver's steps in the apiserver's order, with mutating
// admission between decoding and validation, and returns the apiserver's *apierrors.StatusError.
// Message prints an error as kubectl does. Admission adds statusfold's webhooks.
//
// Written here rather than called are the pieces the libraries do not export, each a few lines that
// call the exported functions in the same order: the CRD handler's decoder wrapper
// (schemaCoercingDecoder), the create handler's wording of a decoding error (transformDecodeError),
// kubectl apply's null pruning, apiVersion/kind and metadata checks, its rendering of an Invalid
// error and its naming of the object; and the create half of the custom resource strategy (its
// package, k8s.io/apiextensions-apiserver/pkg/registry/customresource, would bring the apiserver's
// etcd storage into the binary, as k8s.io/kubectl/pkg/cmd/util would bring kustomize: +40 MB
// together). TestOfflineParity in test/integration/admission holds the results equal to a real
// apiserver and kubectl, and to kubectl's own printer (package kubectltest), for rejected objects;
// TestOfflineParityAccepted holds the admitted objects' specs equal to a server-side dry run's.
package offline
