// Package testutil holds the test builders that the tests of several aggregator packages share:
// WorkStatuses as the wire gives them (WireWorkStatus) with Deployment-shaped reported states
// (DeploymentStatus), and a fake apiserver that records and answers statusfold's writes (FakeAPI,
// over controller-runtime's fake client). Only tests import it.
//
// It imports the API types, controller-runtime's fake client and the standard library only.
package testutil
