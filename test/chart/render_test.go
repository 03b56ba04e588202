package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/statusfold/statusfold/test/framework"
)

const namespace = "statusfold-system"

func requireTools(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs helm (`make helm`) and kubectl (not run with -short)")
	}
	framework.HelmPath(t)
}

// TestChartLint runs `helm lint --strict` with the default and the cert-manager values.
func TestChartLint(t *testing.T) {
	requireTools(t)
	for _, values := range [][]string{nil, {"-f", "testdata/cert-manager.yaml"}} {
		out, err := framework.Helm(context.Background(), t, "", append([]string{"lint", "--strict", framework.ChartDir()}, values...)...)
		if err != nil {
			t.Errorf("helm lint %v: %v\n%s", values, err, out)
		}
	}
}

// TestChartRendersConfig: with the default values the chart renders exactly config/default's
// objects, and with certificates.mode=cert-manager exactly config/default/cert-manager's, apart
// from Helm's own labels and the Namespace (Helm's --create-namespace makes it). So the
// kustomize config and the chart cannot drift apart.
func TestChartRendersConfig(t *testing.T) {
	requireTools(t)
	kubectl := filepath.Join(framework.AssetsDir(), "kubectl")
	for _, tc := range []struct {
		kustomize string
		values    []string
	}{
		{"config/default", nil},
		{"config/default/cert-manager", []string{"-f", "testdata/cert-manager.yaml"}},
	} {
		t.Run(tc.kustomize, func(t *testing.T) {
			rendered := render(t, tc.values...)
			var out, errb bytes.Buffer
			cmd := exec.Command(kubectl, "kustomize", filepath.Join(framework.RepoRoot(), tc.kustomize))
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("kubectl kustomize %s: %v: %s", tc.kustomize, err, errb.String())
			}
			want := parseObjects(t, out.String())
			delete(want, "Namespace//"+namespace)
			got := map[string]*unstructured.Unstructured{}
			for k, o := range rendered {
				got[k] = withoutHelmLabels(o)
			}
			if !reflect.DeepEqual(keys(got), keys(want)) {
				t.Fatalf("objects differ:\nchart:     %v\nkustomize: %v", keys(got), keys(want))
			}
			for k := range want {
				if d := cmp.Diff(want[k].Object, got[k].Object); d != "" {
					t.Errorf("%s differs (-kustomize +chart):\n%s", k, d)
				}
			}
			t.Logf("%d objects: %s", len(got), strings.Join(keys(got), ", "))
		})
	}
}

// TestChartSchemaRejectsBadValues: a values file with wrong values fails before anything is
// rendered, naming every wrong value.
func TestChartSchemaRejectsBadValues(t *testing.T) {
	requireTools(t)
	_, err := framework.Helm(context.Background(), t, "", "template", "statusfold", framework.ChartDir(), "-f", "testdata/bad-values.yaml")
	if err == nil {
		t.Fatal("helm template accepted testdata/bad-values.yaml")
	}
	for _, want := range []string{
		"values don't meet the specifications of the schema",
		"/bindingResolution': value must be one of 'internal', 'external'",
		"/certificates/mode': value must be one of 'builtin', 'cert-manager'",
		"/replicaCount': minimum: got 0, want 1",
		"/wdsName': '",
		"/metrics': additional properties 'serviceMonitr' not allowed",
		"/sizeBudget'",
		"/workloadWatchTimeout'",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

// TestChartOptions renders the options that config/ does not have: kubeconfig Secrets, the
// WDS name, external binding resolution, the ServiceMonitor, the dashboard and the alerts.
func TestChartOptions(t *testing.T) {
	requireTools(t)
	objs := render(t, "--set", "wds.kubeconfigSecret.name=wds-kubeconfig", "--set", "its.kubeconfigSecret.name=its-kubeconfig",
		"--set", "its.kubeconfigSecret.key=value", "--set", "wdsName=wds7", "--set", "bindingResolution=external",
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "dashboard.enabled=true", "--set", "prometheusRule.enabled=true",
		"--set", "webhooks.enabled=false", "--set", "podDisruptionBudget.enabled=false", "--set", "sizeBudget=524288", "--set", "clusterWideWatches=true",
		"--set", "workloadWatchTimeout=5m")
	d := objs["Deployment/"+namespace+"/statusfold-manager"]
	if d == nil {
		t.Fatalf("no Deployment: %v", keys(objs))
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args := fmt.Sprint(containers[0].(map[string]any)["args"])
	for _, want := range []string{"--wds-name=wds7", "--binding-resolution=external", "--webhooks=false",
		"--wds-kubeconfig=/etc/statusfold/wds/kubeconfig", "--its-kubeconfig=/etc/statusfold/its/value", "--size-budget=524288", "--cluster-wide-watches",
		"--workload-watch-timeout=5m"} {
		if !strings.Contains(args, want) {
			t.Errorf("manager args %s lack %s", args, want)
		}
	}
	volumes, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	if v := fmt.Sprint(volumes); !strings.Contains(v, "secretName:wds-kubeconfig") || !strings.Contains(v, "secretName:its-kubeconfig") {
		t.Errorf("volumes %s do not mount both kubeconfig Secrets", v)
	}
	for _, k := range []string{"ServiceMonitor/" + namespace + "/statusfold-manager", "ConfigMap/" + namespace + "/statusfold-dashboard",
		"PrometheusRule/" + namespace + "/statusfold"} {
		if objs[k] == nil {
			t.Errorf("no %s in %v", k, keys(objs))
		}
	}
	// External binding resolution: no writes on Bindings (their status stays writable).
	for mode, objs := range map[string]map[string]*unstructured.Unstructured{"external": objs, "internal": render(t)} {
		cr := objs["ClusterRole//statusfold-manager"]
		if cr == nil {
			t.Fatalf("%s: no ClusterRole statusfold-manager", mode)
		}
		rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
		writesBindings := false
		for _, r := range rules {
			res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
			verbs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
			if slices.Contains(res, "bindings") && slices.Contains(verbs, "create") {
				writesBindings = true
			}
		}
		if writesBindings != (mode == "internal") {
			t.Errorf("%s binding resolution: the ClusterRole grants create on bindings: %v", mode, writesBindings)
		}
	}
	for _, k := range []string{"ValidatingWebhookConfiguration//statusfold-validating-webhook-configuration",
		"Service/" + namespace + "/statusfold-webhook-service", "PodDisruptionBudget/" + namespace + "/statusfold-manager"} {
		if objs[k] != nil {
			t.Errorf("%s rendered although disabled", k)
		}
	}
}

// render runs helm template (release "statusfold" in statusfold-system) and returns the objects
// by kind/namespace/name.
func render(t *testing.T, args ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	out, err := framework.Helm(context.Background(), t, "", append([]string{"template", "statusfold", framework.ChartDir(),
		"--namespace", namespace}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return parseObjects(t, out)
}

func parseObjects(t *testing.T, docs string) map[string]*unstructured.Unstructured {
	t.Helper()
	objs := map[string]*unstructured.Unstructured{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(docs), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("parsing rendered objects: %v", err)
		}
		if m == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		k := objectKey(u)
		if objs[k] != nil {
			t.Fatalf("%s rendered twice", k)
		}
		objs[k] = u
	}
}

func objectKey(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// helmLabels are the labels the chart adds to config/'s.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"}

func withoutHelmLabels(o *unstructured.Unstructured) *unstructured.Unstructured {
	o = o.DeepCopy()
	labels := o.GetLabels()
	for _, l := range helmLabels {
		delete(labels, l)
	}
	if len(labels) == 0 {
		unstructured.RemoveNestedField(o.Object, "metadata", "labels")
	} else {
		o.SetLabels(labels)
	}
	return o
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
