package objects

import (
	"sync"
	"time"

	"github.com/statusfold/statusfold/aggregator/internal/rules"
)

// EventTimes remembers, per object, when the oldest WorkStatus event not yet acted on arrived:
// the start of the event→write latency.
type EventTimes struct {
	mu sync.Mutex
	m  map[rules.ObjectKey]time.Time
}

func NewEventTimes() *EventTimes { return &EventTimes{m: map[rules.ObjectKey]time.Time{}} }

func (e *EventTimes) Mark(k rules.ObjectKey, t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.m[k]; !ok {
		e.m[k] = t
	}
}

// take returns and forgets the time of k's oldest pending event.
func (e *EventTimes) take(k rules.ObjectKey) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.m[k]
	delete(e.m, k)
	return t, ok
}
