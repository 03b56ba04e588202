package luahealth

import (
	"io/fs"
	"path"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/policy/health"
)

// fixture is one case of a script's health_test.yaml.
type fixture struct {
	InputPath    string `json:"inputPath"`
	HealthStatus struct {
		Status  health.Status `json:"status"`
		Message string        `json:"message"`
	} `json:"healthStatus"`
}

// readFixtures reads a script directory's health_test.yaml and the objects it names.
func readFixtures(t testing.TB, dir string) ([]fixture, []map[string]any) {
	t.Helper()
	b, err := fs.ReadFile(ArgoCDFS(), path.Join(dir, "health_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Tests []fixture }
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	objs := make([]map[string]any, len(doc.Tests))
	for i, f := range doc.Tests {
		ob, err := fs.ReadFile(ArgoCDFS(), path.Join(dir, f.InputPath))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(ob, &objs[i]); err != nil {
			t.Fatalf("%s/%s: %v", dir, f.InputPath, err)
		}
	}
	return doc.Tests, objs
}

// TestArgoCDFixtures runs every built-in script on its own fixtures: the environment given here is
// the one the scripts are written for, so each gives the verdict and message Argo CD's tests expect.
func TestArgoCDFixtures(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := fs.Glob(ArgoCDFS(), "*/*/health.lua")
	cases := 0
	for _, f := range files {
		dir := path.Dir(f)
		fixtures, objs := readFixtures(t, dir)
		for i, fx := range fixtures {
			// As in Argo CD's own test, the script is the one the object's kind finds.
			got, ok, err := c.Health(gkOf(objs[i]), objs[i])
			if !ok {
				t.Errorf("%s %s: no script for %v", dir, fx.InputPath, gkOf(objs[i]))
				continue
			}
			if err != nil {
				t.Errorf("%s %s: %v", dir, fx.InputPath, err)
				continue
			}
			if got.Status != fx.HealthStatus.Status || got.Message != fx.HealthStatus.Message {
				t.Errorf("%s %s: got %q %q, want %q %q", dir, fx.InputPath, got.Status, got.Message, fx.HealthStatus.Status, fx.HealthStatus.Message)
			}
			cases++
		}
	}
	t.Logf("%d scripts, %d fixtures", len(files), cases)
	if len(files) < 200 {
		t.Errorf("only %d scripts found", len(files))
	}
}

// gkOf is the group and kind of an object.
func gkOf(obj map[string]any) schema.GroupKind {
	av, _ := obj["apiVersion"].(string)
	k, _ := obj["kind"].(string)
	return schema.FromAPIVersionAndKind(av, k).GroupKind()
}
