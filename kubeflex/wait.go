package kubeflex

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitOptions configures Wait.
type WaitOptions struct {
	// LogEvery is how often a line says what is still missing (default 10 s).
	LogEvery time.Duration
	// Backoff is the delay between two lookups: from Initial, doubling, up to Max (defaults 1 s
	// and 30 s).
	Initial, Max time.Duration
	// Report, when set, gets what is missing before each wait ("" once found), e.g. for a
	// readiness probe.
	Report func(missing string)
}

// Wait calls f.Space until it returns a Space or ctx ends (then the last error). Every failure
// is waited out — a ControlPlane not created yet, its Secret not written yet, but also a lookup
// the hosting cluster refuses (RBAC being set up) or two ITSes where one was expected — with
// exponential backoff, and logged at most once per LogEvery, so a space that is not ready is
// visible without the process exiting and restarting.
func (f Finder) Wait(ctx context.Context, log logr.Logger, role, name string, o WaitOptions) (Space, error) {
	if o.LogEvery <= 0 {
		o.LogEvery = 10 * time.Second
	}
	if o.Initial <= 0 {
		o.Initial = time.Second
	}
	if o.Max <= 0 {
		o.Max = 30 * time.Second
	}
	delay := o.Initial
	var lastLog time.Time
	for {
		s, err := f.Space(ctx, role, name)
		if err == nil {
			if o.Report != nil {
				o.Report("")
			}
			log.Info("found space", "role", role, "controlPlane", s.ControlPlane.Name, "type", s.ControlPlane.Type,
				"secret", s.Secret.String(), "key", s.Key, "host", s.Config.Host)
			return s, nil
		}
		if o.Report != nil {
			o.Report(role + ": " + err.Error())
		}
		if time.Since(lastLog) >= o.LogEvery {
			log.Info("waiting for a KubeFlex control plane", "role", role, "name", name, "missing", err.Error(),
				"notReady", IsNotReady(err), "retryIn", delay.String())
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return Space{}, err
		case <-time.After(delay):
		}
		delay = min(2*delay, o.Max)
	}
}

// Changed polls the spaces' ControlPlanes and Secrets every interval and returns a description
// of the first change of the kubeconfig in use (another Secret, key or content, or another
// type), or "" when ctx ends. A lookup that fails (a Secret being replaced) is retried at the
// next poll: only a kubeconfig that can be used again counts as a change.
func (f Finder) Changed(ctx context.Context, log logr.Logger, interval time.Duration, spaces ...Space) string {
	var changed string
	_ = wait.PollUntilContextCancel(ctx, interval, false, func(ctx context.Context) (bool, error) {
		for _, s := range spaces {
			now, err := f.Space(ctx, s.Role, s.ControlPlane.Name)
			if err != nil {
				log.V(1).Info("re-reading a space's kubeconfig failed; retrying", "controlPlane", s.ControlPlane.Name, "err", err.Error())
				continue
			}
			if now.Fingerprint != s.Fingerprint {
				changed = now.ControlPlane.String() + ": the kubeconfig changed (Secret " + now.Secret.String() + ", key " + now.Key + ")"
				return true, nil
			}
		}
		return false, nil
	})
	return changed
}
