package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/test/framework"
)

// TestVersionsAgree: the release version in VERSION (the tag `make image` gives the image) is the
// chart's version (without the v) and appVersion (the default image tag), and the tag of the image
// config/default and statusfold's KubeFlex PostCreateHook run.
func TestVersionsAgree(t *testing.T) {
	root := framework.RepoRoot()
	read := func(path string) []byte {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	version := strings.TrimSpace(string(read("VERSION")))
	var chart struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(read("charts/statusfold/Chart.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	if chart.AppVersion != version || "v"+chart.Version != version {
		t.Errorf("VERSION %s, chart version %s, appVersion %s: want version %s and appVersion %s",
			version, chart.Version, chart.AppVersion, strings.TrimPrefix(version, "v"), version)
	}
	if m := string(read("config/default/kustomization.yaml")); !strings.Contains(m, "newTag: "+version+"\n") {
		t.Errorf("config/default/kustomization.yaml does not set the image tag %s", version)
	}
	if hook := string(read("config/kubeflex/statusfold-postcreatehook.yaml")); !strings.Contains(hook, "value: ghcr.io/statusfold/statusfold:"+version+"\n") {
		t.Errorf("config/kubeflex/statusfold-postcreatehook.yaml does not run ghcr.io/statusfold/statusfold:%s", version)
	}
}
