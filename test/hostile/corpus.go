package hostile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime"
)

// Case is one hostile input and what must happen to it.
type Case struct {
	Name string `yaml:"name"`
	// Kind says which engine the case goes to: StatusCollector, ContentClassifier, Evaluation,
	// Prune, AggregationPolicy or Aggregation.
	Kind string `yaml:"kind"`
	// Object is the StatusCollector, ContentClassifier or aggregation policy under test.
	Object map[string]any `yaml:"object"`
	// Collectors, Classifier, Workload and WECs are the inputs of an Evaluation or Prune case.
	Collectors []map[string]any `yaml:"collectors"`
	Classifier map[string]any   `yaml:"classifier"`
	Workload   map[string]any   `yaml:"workload"`
	WECs       []WECInput       `yaml:"wecs"`
	// Target is the group/kind of an Aggregation case ("apps/Deployment", "/Pod", "x.io/Widget").
	Target string `yaml:"target"`
	// Policy is the AggregationPolicy installed for an Aggregation case (none: the built-in
	// modules).
	Policy map[string]any `yaml:"policy"`
	// TimeBudget is the collectors' time budget (a Go duration) for a StatusCollector or
	// Evaluation case; without it the corpus uses corpusTimeBudget, so that the cases about the
	// runtime cost limit do not depend on how fast the machine is.
	TimeBudget string `yaml:"timeBudget"`
	Expect     Expect `yaml:"expect"`

	file string
}

// WECInput is one WEC's reported state. StatusJSON, when set, is decoded with encoding/json (so
// that it can be nested deeper than a YAML parser allows) and replaces Status.
type WECInput struct {
	Name       string            `yaml:"name"`
	Labels     map[string]string `yaml:"labels"`
	Status     any               `yaml:"status"`
	StatusJSON string            `yaml:"statusJSON"`
	// Details is a WorkStatus's statusDetails, for aggregation cases.
	Details map[string]any `yaml:"details"`
}

// Expect is what must happen.
type Expect struct {
	// Errors must all be among the field errors (an empty list means: no errors).
	Errors []ExpectedError `yaml:"errors"`
	// RowErrors must all be among the results' row errors.
	RowErrors []ExpectedRowError `yaml:"rowErrors"`
	// Cells are values that must be in the results.
	Cells []ExpectedCell `yaml:"cells"`
	// Rows is the number of rows per collector name.
	Rows map[string]int `yaml:"rows"`
	// Pruned is the expected output of a Prune case.
	Pruned any `yaml:"pruned"`
	// Contains are substrings of the aggregation result as JSON, or of its error.
	Contains []string `yaml:"contains"`
	// NotContains must appear in neither the aggregation result nor its error.
	NotContains []string `yaml:"notContains"`
	// Error is a substring of the error an aggregation must fail with; empty means it must not fail.
	// Alternatives are separated by "||" (containsOneOf): a loop is stopped by the deadline or by
	// the builtin budget, whichever it reaches first, and the machine's speed decides which.
	Error string `yaml:"error"`
	// MayReject lets an Aggregation case's policy be rejected at admission instead of being run.
	MayReject bool `yaml:"mayReject"`
	// Nothing says the aggregation result is nil: nothing to write.
	Nothing bool `yaml:"nothing"`
	// Admission, when set, replaces Errors and MayReject for the entry points that take the
	// object as JSON (the admission webhooks through the apiserver, `statusfold validate`): the
	// apiserver's schema or request size limit may refuse first, and JSON cannot carry bytes that
	// are not UTF-8.
	Admission *AdmissionExpect `yaml:"admission"`
}

// AdmissionExpect is what the JSON entry points do with a case: refuse it with a message
// containing Refused (alternatives separated by "||"), or accept it; with both set, either (a
// check that a deadline may or may not stop, depending on the machine's speed).
type AdmissionExpect struct {
	Refused  string `yaml:"refused"`
	Accepted bool   `yaml:"accepted"`
}

// ExpectedError is one field error: its path, its type (as field.ErrorType prints, e.g.
// "Invalid value") and a substring of its detail (alternatives separated by "||", as in
// Expect.Error).
type ExpectedError struct {
	Field  string `yaml:"field"`
	Type   string `yaml:"type"`
	Detail string `yaml:"detail"`
}

// ExpectedRowError is a row error of one collector's result; Contains is a substring.
type ExpectedRowError struct {
	Collector string `yaml:"collector"`
	WEC       string `yaml:"wec"`
	Column    string `yaml:"column"`
	Contains  string `yaml:"contains"`
}

// ExpectedCell is one cell: collector, row index, column name and its value as in a
// CombinedStatus (`{type: Number, float: "3"}`).
type ExpectedCell struct {
	Collector string         `yaml:"collector"`
	Row       int            `yaml:"row"`
	Column    string         `yaml:"column"`
	Value     map[string]any `yaml:"value"`
}

// templateFuncs expand huge inputs from small files.
var templateFuncs = template.FuncMap{
	// repeat s n: s n times.
	"repeat": strings.Repeat,
	// join s sep n: n copies of s separated by sep.
	"join": func(s, sep string, n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = s
		}
		return strings.Join(parts, sep)
	},
	// nest open inner close n: open×n inner close×n.
	"nest": func(open, inner, close string, n int) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	},
	// add1 i: i+1; mod i n: i modulo n.
	"add1": func(i int) int { return i + 1 },
	"mod":  func(i, n int) int { return i % n },
	// count n: 0, 1, …, n-1, for range.
	"count": func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	},
	// seq sep n: "0<sep>1<sep>…<sep>n-1".
	"seq": func(sep string, n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprint(i)
		}
		return strings.Join(parts, sep)
	},
}

// templateData is what case files can refer to.
type templateData struct {
	// CanaryFile is a JSON file on the local disk that no engine may read:
	// {"enum": ["<Canary>"]}.
	CanaryFile string
	Canary     string
}

// canary is the content of the canary file.
const canary = "STATUSFOLD-CANARY-7f3a"

// LoadCorpus reads every case of the *.yaml files in dir (this package's testdata), with
// canaryFile as the file that no engine may read (see templateData).
func LoadCorpus(dir, canaryFile string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no corpus files in %s: %v", dir, err)
	}
	data := templateData{CanaryFile: canaryFile, Canary: canary}
	if err := os.WriteFile(data.CanaryFile, []byte(`{"enum": ["`+canary+`"]}`), 0o600); err != nil {
		return nil, err
	}
	var cases []Case
	names := map[string]string{}
	for _, f := range files {
		fc, err := loadFile(f, data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, c := range fc {
			if c.Name == "" || c.Kind == "" {
				return nil, fmt.Errorf("%s: a case without name or kind: %+v", f, c)
			}
			if prev, dup := names[c.Name]; dup {
				return nil, fmt.Errorf("case %q in %s and %s", c.Name, prev, f)
			}
			names[c.Name] = f
			cases = append(cases, c)
		}
	}
	return cases, nil
}

func loadFile(path string, data templateData) ([]Case, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New(filepath.Base(path)).Funcs(templateFuncs).Parse(string(src))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(&buf)
	var out []Case
	for {
		var c Case
		if err := dec.Decode(&c); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("case %d: %w", len(out)+1, err)
		}
		c.file = path
		c.Object = normalizeMap(c.Object)
		c.Classifier = normalizeMap(c.Classifier)
		c.Workload = normalizeMap(c.Workload)
		c.Policy = normalizeMap(c.Policy)
		for i := range c.Collectors {
			c.Collectors[i] = normalizeMap(c.Collectors[i])
		}
		for i := range c.WECs {
			c.WECs[i].Status = normalize(c.WECs[i].Status)
			c.WECs[i].Details = normalizeMap(c.WECs[i].Details)
		}
		c.Expect.Pruned = normalize(c.Expect.Pruned)
		out = append(out, c)
	}
}

// normalize turns YAML-decoded values into the types of decoded JSON that the engines and
// runtime.DefaultUnstructuredConverter expect (int64 for integers, map[string]any for maps).
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case uint64:
		return int64(x)
	case map[string]any:
		return normalizeMap(x)
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
		return x
	}
	return v
}

func normalizeMap(m map[string]any) map[string]any {
	for k, v := range m {
		m[k] = normalize(v)
	}
	return m
}

// into converts an unstructured map into a typed object without a JSON round trip, so that bytes
// that are not UTF-8 reach the engine as they are.
func into(m map[string]any, obj any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj)
}

// containsOneOf reports whether text contains one of the alternatives of want, separated by "||".
func containsOneOf(text, want string) bool {
	for _, alt := range strings.Split(want, "||") {
		if strings.Contains(text, alt) {
			return true
		}
	}
	return false
}
