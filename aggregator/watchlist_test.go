package aggregator

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	clientfeatures "k8s.io/client-go/features"
)

const envWatchListChild = "STATUSFOLD_TEST_WATCHLIST_CHILD"

// client-go reads its feature gates from the environment once per process, so each case runs
// in a fresh test process that calls PreferListToWatchList first and prints what client-go then
// decides.
func TestPreferListToWatchList(t *testing.T) {
	if os.Getenv(envWatchListChild) != "" {
		set := PreferListToWatchList()
		t.Logf("RESULT set=%v enabled=%v", set, clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient))
		return
	}
	cases := []struct {
		name string
		env  []string // the operator's setting, if any
		want string
	}{
		{"unset: informers list", nil, "RESULT set=true enabled=false"},
		{"the operator's true wins", []string{EnvWatchListClient + "=true"}, "RESULT set=false enabled=true"},
		{"the operator's false stays", []string{EnvWatchListClient + "=false"}, "RESULT set=false enabled=false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestPreferListToWatchList$", "-test.v")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, EnvWatchListClient+"=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(append(cmd.Env, envWatchListChild+"=1"), tc.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("child printed:\n%s\nwant %q", out, tc.want)
			}
		})
	}
}
