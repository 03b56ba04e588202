package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// MainWithStatusfold is a TestMain body for packages that run the statusfold binary: it builds
// ./cmd/statusfold into a temporary folder (not under -short, where the integration tests skip),
// sets *binary to its path, runs the tests and exits with their code.
func MainWithStatusfold(m *testing.M, binary *string) {
	dir, err := os.MkdirTemp("", "statusfold-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*binary = filepath.Join(dir, "statusfold")
	build := exec.Command("go", "build", "-o", *binary, "./cmd/statusfold")
	build.Dir = RepoRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if !testing.Short() {
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building statusfold:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
