// Command statusfold returns the reported state of workloads propagated to many clusters: it runs
// the controllers and webhooks (`manager`), the embedded local default (`local`), and offline tools
// that share the engines with them (`eval`, `aggregate`, `validate`).
package main

import (
	"fmt"
	"os"

	"github.com/statusfold/statusfold/aggregator"
)

func main() {
	// Before any client reads client-go's feature gates: informers list, then watch.
	aggregator.PreferListToWatchList()
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(exitCode(err))
	}
}
