// Package chart tests the Helm chart charts/statusfold with the Helm binary that `make helm`
// builds: lint, rendering (against config/'s kustomize output, so the two cannot drift), schema
// checks of values, and install, upgrade and uninstall into a real apiserver.
package chart
