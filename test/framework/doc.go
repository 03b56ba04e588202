// Package framework is the one control-plane helper for statusfold's integration tests: it starts
// a real kube-apiserver and etcd (controller-runtime envtest, with binaries built from Go modules by
// `make envtest-assets`), installs every CRD statusfold uses, and hands back clients, a kubeconfig
// file and the matching kubectl.
//
//	cp := framework.RunControlPlane(t)
//	cp.Client.Create(ctx, obj)
package framework
