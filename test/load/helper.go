package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"time"

	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/statusfold/statusfold/aggregator"
)

// WDSName is the WDS name the load test's manager runs as.
const WDSName = "wds1"

// RunManagerHelper runs the manager when the process was started by StartManager, and returns
// false otherwise. It serves net/http/pprof on its own address, because `statusfold manager`
// has no pprof flag.
func RunManagerHelper() bool {
	if os.Getenv(EnvManagerHelper) == "" {
		return false
	}
	aggregator.PreferListToWatchList() // as statusfold's main does
	if err := runManager(); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

func runManager() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(0))))
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	srv := &http.Server{Addr: os.Getenv(envPprofAddr), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ListenAndServe() }()
	defer srv.Close()

	// ctrl.GetConfig reads $KUBECONFIG and turns off client-side rate limiting, as
	// `statusfold manager` does without --wds-kubeconfig.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	coalesce, err := time.ParseDuration(os.Getenv(envCoalesce))
	if err != nil {
		return err
	}
	maxDelay, err := time.ParseDuration(os.Getenv(envMaxDelay))
	if err != nil {
		return err
	}
	if maxDelay == 0 {
		maxDelay = aggregator.PacingOff // as `statusfold manager --max-write-delay=0`
	}
	workers, _ := strconv.Atoi(os.Getenv(envWorkers))
	gcPercent, err := strconv.Atoi(os.Getenv(envGCPercent))
	if err != nil {
		return fmt.Errorf("%s: %w", envGCPercent, err)
	}
	startupGC, err := strconv.Atoi(os.Getenv(envStartupGC))
	if err != nil {
		return fmt.Errorf("%s: %w", envStartupGC, err)
	}
	aggregator.SetGCPercent(gcPercent)                   // as `statusfold manager --gc-percent`
	restore, _ := aggregator.StartupGCPercent(startupGC) // and --startup-gc-percent
	return aggregator.Run(ctx, aggregator.Config{
		Options: aggregator.Options{WDSName: WDSName, CoalesceDelay: coalesce, MaxWriteDelay: maxDelay, Workers: workers,
			AfterFirstPass: restore},
		WDS:         cfg,
		MetricsAddr: os.Getenv(envMetricsAddr),
		ProbeAddr:   "0",
	})
}
