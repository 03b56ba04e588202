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

	columnNames []string
	timeBudget  time.Duration
}

type column struct {
	name string
	prg  *expression
}

type aggregate struct {
	column
	typ controlv1alpha1.AggregatorType // prg is nil for COUNT
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
	for _, a := range c.aggregates {
		c.columnNames = append(c.columnNames, a.name)
	}
	for _, s := range c.selects {
		c.columnNames = append(c.columnNames, s.name)
	}
}
