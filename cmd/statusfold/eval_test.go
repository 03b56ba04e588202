package main

import (
	"errors"
	"strings"
	"testing"
)

const evalTD = "testdata/eval/"

// The StatusCollector examples of KubeStellar's docs.
const seedCollectors = "../../api/control/v1alpha1/testdata/statuscollectors.yaml"

func TestEvalCommand(t *testing.T) {
	wecs := []string{"--object", evalTD + "deployment.yaml",
		"--wec", "cluster1=" + evalTD + "ws-cluster1.yaml", "--wec", "cluster2=" + evalTD + "deployment-cluster2.yaml", "--wec", "cluster3"}
	args := func(extra ...string) []string { return append(append([]string{"eval"}, wecs...), extra...) }
	cases := []struct {
		name string
		args []string
		want string // JSON of the whole output
	}{{
		name: "seed examples: a WorkStatus, a WEC's object and a WEC that reported nothing",
		args: args("--collector", seedCollectors, "--wec-updated", "cluster1=2024-11-07T20:15:27Z"),
		want: `[
		{"name":"available-replicas-histogram","columnNames":["numAvailable","count"],
		 "rows":[{"columns":[{"type":"Number","float":"1"},{"type":"Number","float":"1"}]},
		         {"columns":[{"type":"Number","float":"2"},{"type":"Number","float":"1"}]}],
		 "rowErrors":[{"wec":{"clusterId":"cluster3"},"columnName":"numAvailable","error":"no such key: availableReplicas"}]},
		{"name":"count-wecs","columnNames":["count"],"rows":[{"columns":[{"type":"Number","float":"3"}]}]},
		{"name":"full-status","columnNames":["wec","status","retrievalTime"],
		 "rows":[
		  {"columns":[{"type":"String","string":"cluster1"},
		    {"type":"Object","object":{"availableReplicas":2,"phase":"Running","readyReplicas":2,"replicas":2}},
		    {"type":"String","string":"2024-11-07T20:15:27Z"}]},
		  {"columns":[{"type":"String","string":"cluster2"},
		    {"type":"Object","object":{"availableReplicas":1,"phase":"Pending","replicas":2}},
		    {"type":"Null"}]},
		  {"columns":[{"type":"String","string":"cluster3"},{"type":"Null"},{"type":"Null"}]}],
		 "rowErrors":[{"wec":{"clusterId":"cluster2"},"columnName":"retrievalTime","error":"no such key: lastReturnedUpdateTimestamp"},
		           {"wec":{"clusterId":"cluster3"},"columnName":"retrievalTime","error":"no such key: lastReturnedUpdateTimestamp"}]},
		{"name":"not-as-available-as-desired","columnNames":["wec"],"rows":[{"columns":[{"type":"String","string":"cluster2"}]}],
		 "rowErrors":[{"wec":{"clusterId":"cluster3"},"columnName":"","error":"no such key: availableReplicas"}]},
		{"name":"pod-phase-histogram","columnNames":["phase","count"],
		 "rows":[{"columns":[{"type":"String","string":"Pending"},{"type":"Number","float":"1"}]},
		         {"columns":[{"type":"String","string":"Running"},{"type":"Number","float":"1"}]}],
		 "rowErrors":[{"wec":{"clusterId":"cluster3"},"columnName":"phase","error":"no such key: phase"}]}]`,
	}, {
		// cluster3, the only WEC in us, failed the SUM subject: its row is left out of the
		// aggregation input, so there is no us group (docs/rules.md "Collectors").
		name: "inventory labels, JSON output",
		args: args("--collector", evalTD+"by-region.yaml", "--wec-labels", "cluster1=region=eu,tier=gold", "--wec-labels", "cluster2=region=eu",
			"--wec-labels", "cluster3=region=us", "-o", "json"),
		want: `[{"name":"available-by-region","columnNames":["region","wecs","available"],
		 "rows":[{"columns":[{"type":"String","string":"eu"},{"type":"Number","float":"2"},{"type":"Number","float":"3"}]}],
		 "rowErrors":[{"wec":{"clusterId":"cluster3"},"columnName":"available","error":"no such key: availableReplicas"}]}]`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if err != nil {
				t.Fatalf("eval: %v\n%s", err, out)
			}
			if got, want := asJSON(t, out), asJSON(t, tc.want); got != want {
				t.Errorf("output:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestEvalTable(t *testing.T) {
	out, err := runCLI(t, "eval", "--collector", evalTD+"by-region.yaml", "--object", evalTD+"deployment.yaml",
		"--wec", "cluster1="+evalTD+"ws-cluster1.yaml", "--wec", "cluster2="+evalTD+"deployment-cluster2.yaml", "--wec", "cluster3",
		"--wec-labels", "cluster1=region=eu", "--wec-labels", "cluster2=region=us", "--wec-labels", "cluster3=region=us", "-o", "table")
	if err != nil {
		t.Fatal(err)
	}
	want := `available-by-region:
region  wecs  available
eu      1     2
us      1     1
  error: wec cluster3, column available: no such key: availableReplicas
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

// TestEvalTableValues shows an Object cell as its plain JSON, and a filter's row error.
func TestEvalTableValues(t *testing.T) {
	out, err := runCLI(t, "eval", "--collector", seedCollectors, "--object", evalTD+"deployment.yaml",
		"--wec", "cluster1="+evalTD+"ws-cluster1.yaml", "--wec", "cluster2="+evalTD+"deployment-cluster2.yaml", "--wec", "cluster3",
		"--wec-updated", "cluster1=2024-11-07T20:15:27Z", "-o", "table")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`cluster1  {"availableReplicas":2,"phase":"Running","readyReplicas":2,"replicas":2}  2024-11-07T20:15:27Z`,
		`cluster3  <null>`,
		`  error: wec cluster3, column (filter): no such key: availableReplicas`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	obj := []string{"--object", evalTD + "deployment.yaml"}
	cases := []struct {
		name     string
		args     []string
		wantCode int // 0: any error
		want     []string
	}{{
		name:     "invalid collector: the admission field errors, exit status 1",
		args:     append([]string{"eval", "--collector", evalTD + "invalid.yaml", "--wec", "c1"}, obj...),
		wantCode: 1,
		want: []string{`StatusCollector "bad" is invalid:`,
			`* spec.filter: Invalid value: "inventory.nmae == 'x'": compilation failed: ERROR: <input>:1:10: undefined field 'nmae'`,
			`* spec.combinedFields[0].subject: Required value: SUM needs a subject`},
	}, {
		name:     "unknown field: named by its path",
		args:     append([]string{"eval", "--collector", evalTD + "unknown-field.yaml"}, obj...),
		wantCode: 1,
		want: []string{`unknown-field.yaml: document 1: StatusCollector in version "v1alpha1" cannot be handled as a StatusCollector: ` +
			`strict decoding error: unknown field "spec.select[0].deff"`},
	}, {
		name:     "a number where an expression belongs: the apiserver's message, with the field path",
		args:     append([]string{"eval", "--collector", evalTD + "number-subject.yaml"}, obj...),
		wantCode: 1,
		want: []string{`number-subject.yaml: document 1: The StatusCollector "number-subject" is invalid: ` +
			`spec.combinedFields[0].subject: Invalid value: "integer": spec.combinedFields[0].subject in body must be of type string: "integer"`},
	}, {
		name:     "not a StatusCollector",
		args:     append([]string{"eval", "--collector", evalTD + "deployment.yaml"}, obj...),
		wantCode: 1,
		want:     []string{`want a control.kubestellar.io/v1alpha1 StatusCollector, got apiVersion "apps/v1" kind "Deployment"`},
	}, {
		name: "labels for a WEC not given with --wec",
		args: append([]string{"eval", "--collector", seedCollectors, "--wec", "c1", "--wec-labels", "c2=a=b"}, obj...),
		want: []string{`--wec-labels "c2=a=b": want NAME=... for a WEC given with --wec`},
	}, {
		name: "bad label list",
		args: append([]string{"eval", "--collector", seedCollectors, "--wec", "c1", "--wec-labels", "c1=ab"}, obj...),
		want: []string{`--wec-labels "c1=ab": want NAME=key=value,key=value`},
	}, {
		name: "bad time",
		args: append([]string{"eval", "--collector", seedCollectors, "--wec", "c1", "--wec-updated", "c1=yesterday"}, obj...),
		want: []string{`--wec-updated "c1=yesterday": parsing time`},
	}, {
		name: "duplicate WEC",
		args: append([]string{"eval", "--collector", seedCollectors, "--wec", "c1", "--wec", "c1"}, obj...),
		want: []string{`--wec "c1": WEC "c1" given twice`},
	}, {
		name: "bad output format",
		args: append([]string{"eval", "--collector", seedCollectors, "-o", "xml"}, obj...),
		want: []string{`--output "xml": want yaml, json or table`},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCLI(t, tc.args...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			var ee *exitError
			if tc.wantCode != 0 && (!errors.As(err, &ee) || ee.code != tc.wantCode) {
				t.Errorf("error %v: want exit status %d", err, tc.wantCode)
			}
		})
	}
}
