package writer

import (
	"sync"

	"github.com/statusfold/statusfold/policy/sizebudget"
)

// Budgets are the object size budgets of statusfold's writes (docs/rules.md "Size budget"): one
// default, and for an object whose write the apiserver refused as too large, a lower budget
// learned from that refusal, kept for the object until the process ends or the object's
// content fits in half of it. Safe for concurrent use.
type Budgets struct {
	def     int
	mu      sync.Mutex
	learned map[string]int
}

// NewBudgets returns budgets of def bytes (0: sizebudget.DefaultBytes).
func NewBudgets(def int) *Budgets {
	if def <= 0 {
		def = sizebudget.DefaultBytes
	}
	return &Budgets{def: def, learned: map[string]int{}}
}

// For is the budget of the object known by key.
func (b *Budgets) For(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n, ok := b.learned[key]; ok {
		return n
	}
	return b.def
}

// Shrink lowers the budget of key after the apiserver refused a write of sent bytes as too
// large: to three quarters of the smaller of the current budget and sent, never below
// sizebudget.MinBytes. It returns the new budget and whether it is lower than before.
func (b *Budgets) Shrink(key string, sent int) (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur, ok := b.learned[key]
	if !ok {
		cur = b.def
	}
	n := max(min(cur, sent)*3/4, sizebudget.MinBytes)
	if n >= cur {
		return cur, false
	}
	b.learned[key] = n
	return n, true
}

// Settle forgets the learned budget of key once an object of size bytes was written within
// half of it (the content shrank well below what the apiserver refused), and when forget.
func (b *Budgets) Settle(key string, size int, forget bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n, ok := b.learned[key]; ok && (forget || size <= n/2) {
		delete(b.learned, key)
	}
}
