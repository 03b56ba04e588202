// Package library_test evaluates every ready-made collector of config/samples/library with the
// collector engine (the one `statusfold eval` and the controller use) over the example reported
// states in testdata/, and compares the results with the expected CombinedStatus results.
package library_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/collector"
)

type wecInput struct {
	Name       string            `json:"name"`
	Labels     map[string]string `json:"labels,omitempty"`
	LastUpdate *time.Time        `json:"lastUpdate,omitempty"`
	Status     any               `json:"status,omitempty"`
}

// testCase is one testdata file: a collector, the inputs (inline, or from another testdata file
// named by `inputs`) and the expected result.
type testCase struct {
	Collector string                                  `json:"collector"`
	Inputs    string                                  `json:"inputs,omitempty"`
	Object    map[string]any                          `json:"object,omitempty"`
	WECs      []wecInput                              `json:"wecs,omitempty"`
	Expected  *controlv1alpha1.NamedStatusCombination `json:"expected,omitempty"`
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestLibraryCollectors(t *testing.T) {
	comp, err := collector.NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tested := map[string]bool{}
	for _, f := range files {
		var tc testCase
		readYAML(t, f, &tc)
		if tc.Collector == "" {
			continue // an inputs-only file
		}
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			if tc.Inputs != "" {
				var in testCase
				readYAML(t, filepath.Join("testdata", tc.Inputs), &in)
				tc.Object, tc.WECs = in.Object, in.WECs
			}
			var sc controlv1alpha1.StatusCollector
			readYAML(t, tc.Collector+".yaml", &sc)
			col, errs, _ := comp.Compile(&sc)
			if len(errs) > 0 {
				t.Fatalf("collector %s: %v", sc.Name, errs)
			}
			wecs := make([]collector.WEC, 0, len(tc.WECs))
			for _, w := range tc.WECs {
				wecs = append(wecs, collector.WEC{Name: w.Name, Labels: w.Labels, Status: w.Status, LastUpdate: w.LastUpdate})
			}
			got := collector.Evaluate(tc.Object, wecs, []*collector.Collector{col})
			if len(got) != 1 {
				t.Fatalf("got %d results, want 1", len(got))
			}
			gj, _ := json.MarshalIndent(got[0], "", " ")
			wj, _ := json.MarshalIndent(tc.Expected, "", " ")
			if string(gj) != string(wj) {
				t.Errorf("got\n%s\nwant\n%s", gj, wj)
			}
			tested[tc.Collector] = true
		})
	}
	collectors, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range collectors {
		if name := strings.TrimSuffix(c, ".yaml"); !tested[name] {
			t.Errorf("library collector %s has no test case in testdata/", name)
		}
	}
}
