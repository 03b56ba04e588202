// Package kscompat runs statusfold beside the real KubeStellar v0.30.0 controller-manager on one
// kube-apiserver (KubeFlex hosting cluster, WDS and ITS at once): statusfold in external binding
// mode behind KubeStellar's binding controller, a differential of both status controllers over a
// generated corpus, and benchmarks of KubeStellar's evaluation code against statusfold's engine.
// TestKubeStellarTopology runs KubeStellar's own topology instead: a hosting cluster with KubeFlex
// ControlPlanes, an ITS and two WDSes, each its own kube-apiserver and etcd, one KubeStellar
// controller-manager and one statusfold release per WDS (docs/install.md, "With KubeStellar's core
// chart").
//
// It is a Go module of its own so that KubeStellar's Kubernetes v0.32 and cel-go v0.22 stay out of
// statusfold's go.mod. See docs/kubestellar.md.
package kscompat
