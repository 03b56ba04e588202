package collector

import (
	"time"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Collector is a compiled, valid StatusCollector. It is immutable and may be shared by many
// Tables and goroutines.
type Collector struct {
	name       string
	limit      int64
	filter     *expression // nil: keep every row
	groupBy    []column
	aggregates []aggregate
	selects    []column
	nsubjects  int // aggregates with a subject (all but COUNT): the subjects a row holds

	columnNames []string
	timeBudget  time.Duration
}

type column struct {
	name string
	prg  *expression
}

type aggregate struct {
	column
	typ  controlv1alpha1.AggregatorType // prg is nil for COUNT
	slot int                            // index of its subject among a row's; -1 for COUNT (no subject)
}

// Name is the StatusCollector's name, which is also the name of its result.
func (c *Collector) Name() string { return c.name }

// Limit is the collector's row limit, with the default applied.
func (c *Collector) Limit() int64 { return c.limit }

// ColumnNames are the result's columns: groupBy columns then combinedFields columns, or the select
// columns, each in spec order.
func (c *Collector) ColumnNames() []string { return c.columnNames }

func (c *Collector) isSelect() bool { return len(c.selects) > 0 }

func (c *Collector) finish() {
	for _, g := range c.groupBy {
		c.columnNames = append(c.columnNames, g.name)
	}
	for k, a := range c.aggregates {
		c.columnNames = append(c.columnNames, a.name)
		c.aggregates[k].slot = -1
		if a.prg != nil {
			c.aggregates[k].slot = c.nsubjects
			c.nsubjects++
		}
	}
	for _, s := range c.selects {
		c.columnNames = append(c.columnNames, s.name)
	}
}
