// Package health is a Go implementation of Argo CD's built-in health checks (gitops-engine
// pkg/health) for the kinds statusfold has built-in aggregation modules for: Deployment,
// StatefulSet, DaemonSet, ReplicaSet, Job, Pod, PersistentVolumeClaim, Service, Ingress,
// APIService and HorizontalPodAutoscaler. It is the judge of the aggregation property test
// (health of the aggregate == worst per-WEC health) and what `statusfold aggregate --explain` prints.
//
// It is pure: objects are plain JSON maps, converted to the typed API structs as Argo CD does.
package health
