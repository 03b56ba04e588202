package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/statusfold/statusfold/test/framework"
)

// TestNoAPIServiceRules: statusfold never selects or writes APIServices (the group is excluded
// from binding resolution), so neither the chart nor config/rbac grants anything on them.
func TestNoAPIServiceRules(t *testing.T) {
	requireTools(t)
	objs := render(t)
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "config", "rbac", "status_writer_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for k, o := range parseObjects(t, string(data)) {
		objs["config/rbac: "+k] = o
	}
	for k, o := range objs {
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			groups, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "apiGroups")
			res, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
			if slices.Contains(groups, "apiregistration.k8s.io") || slices.Contains(res, "apiservices") {
				t.Errorf("%s grants %v on %v", k, groups, res)
			}
		}
	}
}

// TestWebhookMatchConditions: every webhook of the chart skips requests whose spec did not
// change (metadata-only updates), and only those.
func TestWebhookMatchConditions(t *testing.T) {
	requireTools(t)
	objs := render(t)
	for _, k := range []string{"ValidatingWebhookConfiguration//statusfold-validating-webhook-configuration",
		"MutatingWebhookConfiguration//statusfold-mutating-webhook-configuration"} {
		whs, _, _ := unstructured.NestedSlice(objs[k].Object, "webhooks")
		if len(whs) == 0 {
			t.Fatalf("%s has no webhooks", k)
		}
		for _, w := range whs {
			mc, _, _ := unstructured.NestedSlice(w.(map[string]any), "matchConditions")
			if got := fmt.Sprint(mc); !strings.Contains(got, "request.operation == 'CREATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec") {
				t.Errorf("%s: webhook %v: matchConditions %s", k, w.(map[string]any)["name"], got)
			}
		}
	}
}

// TestNetworkPolicy: by default the webhook port is open to every source (the apiserver's
// address is not known in general) and the metrics port only to namespaces labelled
// statusfold.dev/metrics-scraper=true; both peers can be set, and the policy turned off.
func TestNetworkPolicy(t *testing.T) {
	requireTools(t)
	const key = "NetworkPolicy/" + namespace + "/statusfold-manager"
	ingress := func(objs map[string]*unstructured.Unstructured) map[string]string {
		np := objs[key]
		if np == nil {
			t.Fatalf("no %s in %v", key, keys(objs))
		}
		types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes")
		if !slices.Equal(types, []string{"Ingress"}) {
			t.Errorf("policyTypes %v", types)
		}
		sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
		if sel["app.kubernetes.io/name"] != "statusfold" {
			t.Errorf("podSelector %v", sel)
		}
		rules, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
		byPort := map[string]string{}
		for _, r := range rules {
			ports, _, _ := unstructured.NestedSlice(r.(map[string]any), "ports")
			from, found, _ := unstructured.NestedSlice(r.(map[string]any), "from")
			for _, p := range ports {
				peers := "all sources"
				if found {
					peers = fmt.Sprint(from)
				}
				byPort[fmt.Sprint(p.(map[string]any)["port"])] = peers
			}
		}
		return byPort
	}
	got := ingress(render(t))
	want := map[string]string{"9443": "all sources",
		"8080": "[map[namespaceSelector:map[matchLabels:map[statusfold.dev/metrics-scraper:true]]]]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("default ingress by port:\n got %v\nwant %v", got, want)
	}
	got = ingress(render(t, "--set-json", `networkPolicy.webhookFrom=[{"ipBlock":{"cidr":"10.0.0.0/8"}}]`,
		"--set-json", `networkPolicy.metricsFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]`))
	want = map[string]string{"9443": "[map[ipBlock:map[cidr:10.0.0.0/8]]]",
		"8080": "[map[namespaceSelector:map[matchLabels:map[kubernetes.io/metadata.name:monitoring]]]]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ingress by port with peers set:\n got %v\nwant %v", got, want)
	}
	if objs := render(t, "--set", "networkPolicy.enabled=false"); objs[key] != nil {
		t.Errorf("%s rendered although disabled", key)
	}
}
