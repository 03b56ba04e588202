package kscompat

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// helmBin is Helm as `make helm` builds it ($HELM, which the Makefile exports, or bin/tools).
func helmBin(t testing.TB) string {
	t.Helper()
	h := os.Getenv("HELM")
	if h == "" {
		h = filepath.Join(repoRoot(), "bin", "tools", "helm-v3.22.0", "helm")
	}
	if _, err := os.Stat(h); err != nil {
		t.Fatalf("%s missing: run `make helm`", h)
	}
	return h
}

// coreChartHook renders KubeStellar v0.30.0's core chart with Helm, as `helm install` of the chart
// does with its default values, and returns its PostCreateHook kubestellar-controller. The chart's
// dependencies (KubeFlex's operator, Argo CD) are optional subcharts that are not in the module:
// a copy of the chart without them renders the same hook.
func coreChartHook(t testing.TB) *unstructured.Unstructured {
	t.Helper()
	src := filepath.Join(modDir(t, "github.com/kubestellar/kubestellar"), "core-chart")
	dst := filepath.Join(t.TempDir(), "core-chart")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	chartYAML := filepath.Join(dst, "Chart.yaml")
	b, err := os.ReadFile(chartYAML)
	if err != nil {
		t.Fatal(err)
	}
	b = b[:bytes.Index(b, []byte("\ndependencies:"))]
	if err := os.WriteFile(chartYAML, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(helmBin(t), "template", "ks-core", dst, "--show-only", "templates/postcreatehooks/kubestellar-controller.yaml")
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm template core-chart: %v\n%s", err, out)
	}
	return decodeOne(t, out)
}

func decodeOne(t testing.TB, data []byte) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// installPostCreateHookCRD adds KubeFlex's PostCreateHook CRD to the space.
func (s *space) installPostCreateHookCRD() {
	s.t.Helper()
	path := kubeflexCRD(s.t, "postcreatehooks")
	if _, err := envtest.InstallCRDs(s.cfg, envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true}); err != nil {
		s.t.Fatal(err)
	}
}

// kubeflexRender creates the PostCreateHook in the space, reads it back and renders its templates
// as KubeFlex v0.9.3 does (pkg/reconcilers/shared/postcreate_hook.go, pkg/util/unstructured.go
// RenderYAML): each template's stored JSON through text/template with the variables — the hook's
// defaultVars, then the ControlPlane's globalVars and the hook use's vars, then Namespace,
// ControlPlaneName and HookName. (KubeFlex's pkg/util is not imported: it needs modules this one
// does not have; RenderYAML is template.New(…).Parse then Execute.)
func (s *space) kubeflexRender(hook *unstructured.Unstructured, cpName string, vars map[string]any) []*unstructured.Unstructured {
	t, ctx := s.t, context.Background()
	t.Helper()
	if err := s.c.Create(ctx, hook); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating PostCreateHook %s: %v", hook.GetName(), err)
	}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(hook.GroupVersionKind())
	if err := s.c.Get(ctx, client.ObjectKeyFromObject(hook), stored); err != nil {
		t.Fatal(err)
	}
	all := map[string]any{}
	defaults, _, _ := unstructured.NestedSlice(stored.Object, "spec", "defaultVars")
	for _, dv := range defaults {
		m := dv.(map[string]any)
		all[m["name"].(string)] = m["value"]
	}
	for k, v := range vars {
		all[k] = v
	}
	all["Namespace"], all["ControlPlaneName"], all["HookName"] = cpName+"-system", cpName, stored.GetName()
	templates, _, _ := unstructured.NestedSlice(stored.Object, "spec", "templates")
	var objs []*unstructured.Unstructured
	for _, tmpl := range templates {
		raw, err := json.Marshal(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := template.New("yamlTemplate").Parse(string(raw))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := parsed.Execute(&out, all); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "<no value>") {
			t.Errorf("a variable of hook %s is not set: %s", stored.GetName(), out.String())
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(out.Bytes()); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

// kubeflexApply applies objects as KubeFlex applies a hook's: server-side, field manager
// "kubeflex", not forced, namespaced objects into <ControlPlane>-system.
func (s *space) kubeflexApply(cpName string, objs []*unstructured.Unstructured, opts ...client.PatchOption) error {
	ns := cpName + "-system"
	if err := s.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, o := range objs {
		o = o.DeepCopy()
		namespaced, err := s.c.IsObjectNamespaced(o)
		if err != nil {
			return err
		}
		if namespaced {
			o.SetNamespace(ns)
		}
		if err := s.c.Patch(context.Background(), o, client.Apply, append([]client.PatchOption{client.FieldOwner("kubeflex")}, opts...)...); err != nil {
			return err
		}
	}
	return nil
}
