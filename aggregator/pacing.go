package aggregator

import (
	"github.com/statusfold/statusfold/aggregator/internal/pacing"
)

// The Pacer of internal/pacing (docs/controller.md, "Pacing writes"), under its names in this
// package.
type (
	// Pacer decides, per key, how long the next evaluation and write of that key waits after its
	// last write; see pacing.Pacer.
	Pacer[K comparable] = pacing.Pacer[K]
	// PacerOptions configure a Pacer.
	PacerOptions = pacing.PacerOptions
	// PacerState is a Pacer's state, for metrics and logs.
	PacerState = pacing.PacerState
	// WriteKind is the kind of a paced write.
	WriteKind = pacing.WriteKind
	// WriteOutcome is what a write's result says about the apiserver's load.
	WriteOutcome = pacing.WriteOutcome
)

// The kinds of paced write and the outcomes of a write.
const (
	WriteCombinedStatus = pacing.WriteCombinedStatus
	WriteReturnedStatus = pacing.WriteReturnedStatus
	WriteSucceeded      = pacing.WriteSucceeded
	WriteOverloaded     = pacing.WriteOverloaded
	WriteFailed         = pacing.WriteFailed
)

// DefaultPacerMaxDelay is PacerOptions.MaxDelay's default.
const DefaultPacerMaxDelay = pacing.DefaultPacerMaxDelay

// NewPacer returns a Pacer with D = 0.
func NewPacer[K comparable](o PacerOptions) *Pacer[K] { return pacing.NewPacer[K](o) }

// OutcomeOf classifies a write's error; see pacing.OutcomeOf.
func OutcomeOf(err error) WriteOutcome { return pacing.OutcomeOf(err) }
