// Package inputstest drives an inputs.Gatherer through random sequences of input changes, for
// the tests of the consumers that an inputs.Object feeds incrementally (the CombinedStatus
// Tables, the returned-status States): WorkStatus writes and deletions (also duplicate
// WorkStatuses in one mailbox), inventory label changes, destination changes, object spec and
// status-only changes. Only tests import it.
//
// It imports internal/rules, internal/itscache, internal/inputs, internal/metrics and the API
// types.
package inputstest
