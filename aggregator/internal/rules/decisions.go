package rules

// ReturnMode is what statusfold puts into a workload object's own `.status` (docs/rules.md "Status return").
type ReturnMode int

// The status return modes.
const (
	// ReturnNothing: nothing of statusfold's is in `.status`; what statusfold wrote is removed.
	ReturnNothing ReturnMode = iota
	// ReturnCopy: the one qualified WEC's reported state is copied.
	ReturnCopy
	// ReturnAggregate: the qualified WECs' reported states are aggregated.
	ReturnAggregate
	// ReturnLeave: nothing is written for this resource: the same object (same UID) is bound
	// under another resource that asks for a return, and that resource's evaluation owns it.
	ReturnLeave
)

func (m ReturnMode) String() string {
	switch m {
	case ReturnCopy:
		return "Copy"
	case ReturnAggregate:
		return "Aggregate"
	case ReturnLeave:
		return "Leave"
	default:
		return "Nothing"
	}
}

// Label is KubeStellar's label that marks an object whose `.status` holds a status returned in
// this mode ("" for ReturnNothing).
func (m ReturnMode) Label() string {
	switch m {
	case ReturnCopy:
		return LabelSingletonStatus
	case ReturnAggregate:
		return LabelMultiWECStatus
	}
	return ""
}

// ReturnInput is everything the status return decision depends on.
type ReturnInput struct {
	// Singleton: some clause that matches the object sets wantSingletonReportedState.
	Singleton bool
	// Multi: some clause that matches the object sets wantMultiWECReportedState.
	Multi bool
	// Qualified is |Q|: the number of WECs associated with the object by a clause that asks for
	// either kind of return, across all policies.
	Qualified int
	// ReturnedElsewhere: the same object (same UID) is bound, under another resource that
	// serves it (an aggregated API over a CRD, a resource served by two groups), by a clause
	// that asks for a return. statusfold's return fields on the object are then that
	// resource's to write or remove (docs/controller.md "Failures").
	ReturnedElsewhere bool
}

// ReturnDecision is the outcome: what goes into `.status`, and whether the object carries the
// label `kubestellar.io/executing-count` (= ReturnInput.Qualified).
type ReturnDecision struct {
	Mode ReturnMode
	// Label: the object carries `kubestellar.io/executing-count`.
	Label bool
	// Reason is a one-word explanation, for logs and events.
	Reason string
}

// returnCheck is one row group of the docs/rules.md "Status return" truth table: it either decides or passes.
type returnCheck func(in ReturnInput) (ReturnDecision, bool)

// returnChecks is the docs/rules.md "Status return" truth table as an ordered chain; the first check that decides wins.
var returnChecks = []returnCheck{
	// Nothing requested here, but the object is returned under another resource: leave it.
	func(in ReturnInput) (ReturnDecision, bool) {
		return ReturnDecision{Mode: ReturnLeave, Reason: "ReturnedUnderOtherResource"}, !in.Singleton && !in.Multi && in.ReturnedElsewhere
	},
	// Neither kind of return requested: nothing of ours, and no label.
	func(in ReturnInput) (ReturnDecision, bool) {
		return ReturnDecision{Mode: ReturnNothing, Reason: "NotRequested"}, !in.Singleton && !in.Multi
	},
	// Exactly one qualified WEC: copy it, whichever kind was requested.
	func(in ReturnInput) (ReturnDecision, bool) {
		return ReturnDecision{Mode: ReturnCopy, Label: true, Reason: "SingleWEC"}, in.Qualified == 1
	},
	// Multi requested and several qualified WECs: aggregate (multi takes precedence over singleton).
	func(in ReturnInput) (ReturnDecision, bool) {
		return ReturnDecision{Mode: ReturnAggregate, Label: true, Reason: "MultiWEC"}, in.Multi && in.Qualified > 1
	},
	// Only singleton requested with several qualified WECs: nothing of ours, label says how many.
	func(in ReturnInput) (ReturnDecision, bool) {
		return ReturnDecision{Mode: ReturnNothing, Label: true, Reason: "NotSingleton"}, in.Qualified > 1
	},
	// No qualified WEC: nothing to return, label says 0.
	func(in ReturnInput) (ReturnDecision, bool) {
		return ReturnDecision{Mode: ReturnNothing, Label: true, Reason: "NoWEC"}, true
	},
}

// DecideReturn applies the docs/rules.md "Status return" truth table.
func DecideReturn(in ReturnInput) ReturnDecision {
	for _, check := range returnChecks {
		if d, ok := check(in); ok {
			return d
		}
	}
	panic("unreachable: the last return check always decides")
}
