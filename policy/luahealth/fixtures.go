package luahealth

import (
	"fmt"
	"io/fs"
	"path"
	"sort"

	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/policy/health"
)

// Fixture is one of Argo CD's own test cases of a built-in script (its health_test.yaml): an
// object and the verdict Argo CD expects for it.
type Fixture struct {
	Dir    string         // the script's directory, e.g. "argoproj.io/Rollout"
	Path   string         // the object's file under Dir, e.g. "testdata/healthy.yaml"
	Object map[string]any // the whole object
	Want   health.Result
}

// ArgoCDFixtures reads the test cases of every built-in script, in path order. They are the
// property test's and `statusfold policy test --property`'s example reports of Lua-judged kinds.
func ArgoCDFixtures() ([]Fixture, error) {
	files, err := fs.Glob(ArgoCDFS(), "*/*/health_test.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Fixture
	for _, f := range files {
		b, err := fs.ReadFile(ArgoCDFS(), f)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Tests []struct {
				InputPath    string `json:"inputPath"`
				HealthStatus struct {
					Status  health.Status `json:"status"`
					Message string        `json:"message"`
				} `json:"healthStatus"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		dir := path.Dir(f)
		for _, tc := range doc.Tests {
			ob, err := fs.ReadFile(ArgoCDFS(), path.Join(dir, tc.InputPath))
			if err != nil {
				return nil, err
			}
			fx := Fixture{Dir: dir, Path: tc.InputPath, Want: health.Result{Status: tc.HealthStatus.Status, Message: tc.HealthStatus.Message}}
			if err := yaml.Unmarshal(ob, &fx.Object); err != nil {
				return nil, fmt.Errorf("%s/%s: %w", dir, tc.InputPath, err)
			}
			out = append(out, fx)
		}
	}
	return out, nil
}
