package rules

// KindKey is a work item for one of statusfold's own objects whose status it maintains.
type KindKey struct {
	Kind string // StatusCollector, ContentClassifier
	Name string
}

const (
	KindStatusCollector   = "StatusCollector"
	KindContentClassifier = "ContentClassifier"
	KindAggregationPolicy = "AggregationPolicy"
)
