// Package kubeflex finds statusfold's spaces (the WDS and the ITS) the way KubeStellar's
// controller-manager does: from KubeFlex ControlPlane objects (tenancy.kflex.kubestellar.org/v1alpha1,
// cluster-scoped) in the hosting cluster, and the Secrets their status.secretRef names.
// docs/install.md ("With KubeStellar's core chart") states the rules; the package reads
// ControlPlanes as unstructured objects, so it needs neither KubeFlex's module nor its scheme.
package kubeflex
