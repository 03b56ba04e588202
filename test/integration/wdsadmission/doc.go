// Package wdsadmission tests admission in a WDS that is another apiserver than the hosting
// cluster: `statusfold manager --kubeflex` finds the WDS from a KubeFlex ControlPlane in the
// hosting cluster and registers its CRDs and webhook configurations there, calling the webhook
// server by URL (docs/install.md, "With KubeStellar's core chart").
package wdsadmission
