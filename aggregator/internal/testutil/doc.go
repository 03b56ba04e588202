// Package testutil holds the test builders that the tests of several aggregator packages share:
// WorkStatuses as the wire gives them (WireWorkStatus) with Deployment-shaped reported states
// (DeploymentStatus). Only tests import it.
//
// It imports the API types and the standard library only.
package testutil
