// Package kubectltest prints errors with kubectl's own printer, for tests that hold
// offline.Message equal to what kubectl prints. It is imported by tests only: kubectl's command
// line package would add kustomize and more to statusfold's binary.
package kubectltest

import (
	"errors"
	"strings"
	"sync"

	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/statusfold/statusfold/webhooks/offline"
)

// mu serializes Message: kubectl's printer reports through a package-level handler.
var mu sync.Mutex

// Message is what `kubectl apply -f SOURCE` prints, without the trailing newline, when
// creating an object read from source fails with err (from offline.Server.Apply or
// offline.Admission): k8s.io/kubectl/pkg/cmd/util.CheckErr, after AddSourceToErr("creating",
// ...) for the apiserver's errors (an *offline.ClientError names its source already).
func Message(err error, source string) string {
	if err == nil {
		return ""
	}
	var ce *offline.ClientError
	if !errors.As(err, &ce) {
		err = cmdutil.AddSourceToErr("creating", source, err)
	}
	mu.Lock()
	defer mu.Unlock()
	var msg string
	cmdutil.BehaviorOnFatal(func(m string, _ int) { msg = m })
	defer cmdutil.DefaultBehaviorOnFatal()
	cmdutil.CheckErr(err)
	return strings.TrimSuffix(msg, "\n")
}
