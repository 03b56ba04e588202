package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const td = "testdata/aggregate/"

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// asJSON normalises YAML or JSON output for comparison.
func asJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not YAML/JSON: %v\n%s", err, s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAggregateCommand(t *testing.T) {
	lagging := []string{"aggregate", "--object", td + "deployment.yaml",
		"--wec", "cluster1=" + td + "ws-cluster1.yaml", "--wec", "cluster2=" + td + "ws-cluster2.yaml", "--wec", "cluster3=" + td + "ws-cluster3.yaml"}
	conds := `[{"lastTransitionTime":"2025-11-25T09:03:00Z","lastUpdateTime":"2025-11-25T09:03:00Z","message":"Deployment has minimum availability.","reason":"MinimumReplicasAvailable","status":"True","type":"Available"},
	           {"lastTransitionTime":"2025-11-25T09:13:00Z","lastUpdateTime":"2025-11-25T09:13:00Z","message":"ReplicaSet \"nginx-abc\" has successfully progressed.","reason":"NewReplicaSetAvailable","status":"True","type":"Progressing"}]`
	runAggregateCases(t, []aggregateCase{{
		name: "three WECs, cluster3 lagging: observedGeneration below the WDS generation",
		args: lagging,
		want: `{"availableReplicas":3,"conditions":` + conds + `,"observedGeneration":3,"readyReplicas":3,"replicas":3,"updatedReplicas":3}`,
	}, {
		name: "explain: each WEC's health and the result's",
		args: append(append([]string{}, lagging...), "--explain", "-o", "json"),
		want: `{"explain":{"result":{"health":"Progressing","message":"Waiting for rollout to finish: observed deployment generation less than desired generation","worstWEC":"Progressing"},"rule":{"healthCheck":"go","name":"builtin/deployment.rego"},
			"wecs":[{"health":"Healthy","name":"cluster1"},{"health":"Healthy","name":"cluster2"},
			        {"health":"Progressing","message":"Waiting for rollout to finish: observed deployment generation less than desired generation","name":"cluster3"}]},
			"status":{"availableReplicas":3,"conditions":` + conds + `,"observedGeneration":3,"readyReplicas":3,"replicas":3,"updatedReplicas":3}}`,
	}, {
		name: "two current WECs: the WDS generation",
		args: []string{"aggregate", "--object", td + "deployment.yaml", "--wec", "cluster1=" + td + "ws-cluster1.yaml", "--wec", "cluster2=" + td + "ws-cluster2.yaml"},
		want: `{"availableReplicas":3,"conditions":` + conds + `,"observedGeneration":4,"readyReplicas":3,"replicas":3,"updatedReplicas":3}`,
	}, {
		name: "a WEC object file, and a WEC that reported nothing",
		args: []string{"aggregate", "--object", td + "deployment.yaml", "--wec", "edge=" + td + "nginx-wec.yaml", "--wec", "silent"},
		want: `{"availableReplicas":0,"observedGeneration":3,"replicas":3,"updatedReplicas":0}`,
	}, {
		name: "one WEC object file: a copy, current",
		args: []string{"aggregate", "--object", td + "deployment.yaml", "--wec", "edge=" + td + "nginx-wec.yaml"},
		want: `{"availableReplicas":2,"observedGeneration":4,"replicas":3,"updatedReplicas":3}`,
	}, {
		name: "a valid policy overrides the built-in module",
		args: append(append([]string{}, lagging...), "--policy", td+"policy-max.yaml"),
		want: `{"observedGeneration":3,"readyReplicas":3}`,
	}, {
		name:    "a bad policy is rejected with Rego positions and the failing example",
		args:    append(append([]string{}, lagging...), "--policy", td+"policy-bad.yaml"),
		wantErr: `spec.rego: Invalid value: "(Rego source)": line 5:9: rego_type_error: undefined function http.send`,
	}, {
		name: "a misspelt policy field is the apiserver's strict decoding error",
		args: append(append([]string{}, lagging...), "--policy", td+"policy-typo.yaml"),
		wantErr: `policy-typo.yaml: document 1: AggregationPolicy in version "v1alpha1" cannot be handled as a AggregationPolicy: ` +
			`strict decoding error: unknown field "spec.exampels"`,
	}, {
		name:    "bad output format",
		args:    append(append([]string{}, lagging...), "-o", "table"),
		wantErr: `--output "table": want yaml or json`,
	}})
}

// TestAggregateLua: kinds with a Lua health check, Argo CD's and a user's.
func TestAggregateLua(t *testing.T) {
	runAggregateCases(t, []aggregateCase{{
		name: "a kind with a Lua check: the worst WEC's status by Argo CD's script, and why",
		args: []string{"aggregate", "--object", td + "certificate.yaml", "--wec", "b=" + td + "certificate-ready.yaml",
			"--wec", "a=" + td + "certificate-failed.yaml", "--wec", "c=" + td + "certificate-ready.yaml", "--explain", "-o", "json"},
		want: `{"explain":{"result":{"health":"Degraded","message":"the issuer is not ready","worstWEC":"Degraded"},
			"rule":{"healthCheck":"lua/argo-cd/cert-manager.io/Certificate","name":"lua/argo-cd/cert-manager.io/Certificate"},
			"wecs":[{"health":"Healthy","message":"Certificate is up to date and has not expired","name":"b"},
				{"health":"Degraded","message":"the issuer is not ready","name":"a"},
				{"health":"Healthy","message":"Certificate is up to date and has not expired","name":"c"}]},
			"status":{"conditions":[{"message":"the issuer is not ready","observedGeneration":1,"reason":"Failed","status":"False","type":"Ready"}],"observedGeneration":2}}`,
	}, {
		name: "a user's Lua check from a ConfigMap wins; its broken entry is a warning",
		args: []string{"aggregate", "--object", td + "certificate.yaml", "--wec", "a=" + td + "certificate-ready.yaml",
			"--wec", "b=" + td + "certificate-failed.yaml", "--lua-health", td + "lua-health-cm.yaml", "--explain", "-o", "json"},
		warn: `warning: testdata/aggregate/lua-health-cm.yaml: data[resource.customizations.health.example.com_Broken]: example.com/Broken at EOF: syntax error; the kind keeps Argo CD's check or the built-in rules`,
		want: `{"explain":{"result":{"health":"Suspended","message":"waiting for the issuer","worstWEC":"Suspended"},
			"rule":{"healthCheck":"lua/configmap/cert-manager.io/Certificate","name":"lua/configmap/cert-manager.io/Certificate"},
			"wecs":[{"health":"Healthy","name":"a"},{"health":"Suspended","message":"waiting for the issuer","name":"b"}]},
			"status":{"conditions":[{"message":"the issuer is not ready","observedGeneration":1,"reason":"Failed","status":"False","type":"Ready"}],"observedGeneration":2}}`,
	}})
}

// aggregateCase is one `statusfold aggregate` run and what it must print.
type aggregateCase struct {
	name    string
	args    []string
	want    string // JSON of the whole output
	warn    string // a warning line before it
	wantErr string
}

func runAggregateCases(t *testing.T, cases []aggregateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.warn != "" {
				first, rest, _ := strings.Cut(out, "\n")
				if first != tc.warn {
					t.Errorf("warning %q, want %q", first, tc.warn)
				}
				out = rest
			}
			if got, want := asJSON(t, out), asJSON(t, tc.want); got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestPolicyTestCommand(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		wantOut  []string
		wantFail bool
	}{
		{"built-in tests pass", []string{"policy", "test"}, []string{" passed, 0 failed"}, false},
		{"verbose lists them", []string{"policy", "test", "-v"}, []string{"PASS statusfold.builtin.pod_test.test_crashloop_is_degraded"}, false},
		{"a failing user test", []string{"policy", "test", td + "failing_test.rego"}, []string{"FAIL mytests.test_ready_is_max", ", 1 failed"}, true},
		{"a valid policy file", []string{"policy", "test", "-v", td + "policy-max.yaml"}, []string{"PASS " + td + "policy-max.yaml: compiles, 1 examples"}, false},
		{"the docs' example policy", []string{"policy", "test", "-v", td + "policy-sum-ready.yaml"}, []string{"PASS " + td + "policy-sum-ready.yaml: compiles, 1 examples"}, false},
		{"a misspelt field", []string{"policy", "test", td + "policy-typo.yaml"}, []string{"FAIL " + td + `policy-typo.yaml: document 1: ` +
			`AggregationPolicy in version "v1alpha1" cannot be handled as a AggregationPolicy: strict decoding error: unknown field "spec.exampels"`}, true},
		{"a bad policy file", []string{"policy", "test", td + "policy-bad.yaml"}, []string{"FAIL " + td + "policy-bad.yaml: spec.rego", "undefined function http.send"}, true},
		{"property: the sample policy keeps the worst WEC's health", []string{"policy", "test", "--property", "--cases", "200", "../../config/samples/50-aggregationpolicy.yaml"},
			[]string{"PASS property poddisruptionbudgets (PodDisruptionBudget.policy, health by lua/argo-cd/policy/PodDisruptionBudget): 200 cases from argo-cd fixtures"}, false},
		{"property: merged conditions hide a Degraded WEC", []string{"policy", "test", "--property", "--cases", "200", td + "policy-pdb-merge.yaml"},
			[]string{"FAIL property pdb-merge (PodDisruptionBudget.policy, health by lua/argo-cd/policy/PodDisruptionBudget): ", "hide the worst WEC's health", "=Degraded"}, true},
		{"property: a Deployment policy that keeps only readyReplicas", []string{"policy", "test", "--property", "--cases", "200", td + "policy-max.yaml"},
			[]string{"FAIL property deployments-optimistic (Deployment.apps, health by go): ", "cases from generated hide the worst WEC's health"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if (err != nil) != tc.wantFail {
				t.Fatalf("err = %v, want failure %v\n%s", err, tc.wantFail, out)
			}
			if err != nil && exitCode(err) != 1 {
				t.Errorf("exit code %d, want 1", exitCode(err))
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
