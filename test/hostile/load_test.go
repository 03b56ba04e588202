package hostile

import (
	"path/filepath"
	"testing"
)

// loadCorpus reads every case under testdata/.
func loadCorpus(t *testing.T) []Case {
	t.Helper()
	cases, err := LoadCorpus("testdata", filepath.Join(t.TempDir(), "canary.json"))
	if err != nil {
		t.Fatal(err)
	}
	return cases
}
