// Package config embeds statusfold's manifests — the CRDs it installs and the samples — so that
// `statusfold local` works from the binary alone, outside the repository.
package config

import "embed"

// CRDs holds crd/bases/*.yaml (the control.kubestellar.io kinds) and crd/external/*.yaml (OCM's
// ManagedCluster).
//
//go:embed crd/bases/*.yaml crd/external/*.yaml
var CRDs embed.FS

// Samples holds samples/*.yaml (what `statusfold local --demo` applies) and samples/library/*.yaml
// (ready-made StatusCollectors for built-in kinds).
//
//go:embed samples/*.yaml samples/library/*.yaml
var Samples embed.FS
