package inputs

import "github.com/statusfold/statusfold/aggregator/internal/resources"

var _ workloadWatches = (*resources.Watcher)(nil)
