// Package faults holds statusfold's fault tests: a real control plane (test/framework) and the
// real `statusfold` binary, built once, run as child processes — killed with SIGKILL mid-stream,
// run as two leader-electing replicas, run while the apiserver restarts or while another writer
// owns status fields — and a check that every CombinedStatus and returned status then equals a
// fresh evaluation by the engines.
package faults
