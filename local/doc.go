// Package local is `statusfold local`, the embedded default: it starts a local kube-apiserver and
// etcd from the same binaries the tests use (building them with hack/envtest-assets.sh when they
// are missing), installs the CRDs embedded in the binary, writes an admin kubeconfig, runs the
// statusfold manager in-process, and with --demo applies the embedded samples and runs simulated
// WECs (package wecsim). It stays in the foreground until its context ends and then stops every
// process it started, waiting for each to exit.
//
//	err := local.Run(ctx, local.Options{ControlPlaneOptions: local.ControlPlaneOptions{Out: os.Stdout}, Demo: true})
//
// StartControlPlane alone gives a running control plane (for tools and tests that need one
// outside `go test`).
package local
