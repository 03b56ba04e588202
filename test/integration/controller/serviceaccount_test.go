package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks"
)

// The chart's release namespace and ServiceAccount.
const (
	releaseNS      = "statusfold-system"
	serviceAccount = "statusfold-manager"
)

// TestChartServiceAccountRunsScenario installs the Helm chart into a real apiserver and runs the
// manager out of cluster with a token that the TokenRequest API issues for the chart's
// ServiceAccount — what the pod would get — with the webhooks and built-in certificates, and
// drives the whole scenario through it. Every request the apiserver refuses fails the test
// with the denied verb and resource. Then again with --binding-resolution=external.
func TestChartServiceAccountRunsScenario(t *testing.T) {
	for _, mode := range []aggregator.BindingResolution{aggregator.BindingResolutionInternal, aggregator.BindingResolutionExternal} {
		t.Run(string(mode), func(t *testing.T) {
			cp := framework.RunControlPlane(t, framework.WithoutCRDs(), framework.WithAPIServerFlag("enable-aggregator-routing", "true"))
			start := time.Now()
			installChart(t, cp, "--set", "bindingResolution="+string(mode))
			t.Logf("helm install: %s", time.Since(start).Round(time.Millisecond))
			c := cp.Client
			widgetKind(t, c)
			aggregateClusterRoles(t, c)
			sa := serviceAccountConfig(t, cp, releaseNS, serviceAccount)
			webhookPort := framework.FreePort(t)
			routeWebhookService(t, c, webhookPort)
			metricsAddr := framework.FreeAddr(t)
			runManager(t, aggregator.Config{
				Options:                 aggregator.Options{WDSName: wdsName, BindingResolution: mode, CoalesceDelay: 20 * time.Millisecond},
				WDS:                     sa,
				MetricsAddr:             metricsAddr,
				ProbeAddr:               "0",
				LeaderElection:          true,
				LeaderElectionNamespace: releaseNS,
				WebhookPort:             webhookPort,
				CertDir:                 t.TempDir(),
			}, true)

			checkWebhooksServeWithBuiltinCerts(t, c)
			checkLease(t, c)
			runScenario(t, c, mode)
			if mode == aggregator.BindingResolutionInternal {
				checkMonitoringQueriesExported(t, "http://"+metricsAddr+"/metrics")
			}
			checkDenialsAreReported(t, sa)
		})
	}
}

// TestChartServiceAccountTwoWDSOneITS: two WDSes (two apiservers, the chart installed in each
// with its own wdsName) share one ITS (the first apiserver). Each manager runs as its chart's
// ServiceAccount in its WDS and reads the ITS as a ServiceAccount bound to the ITS reader role
// of docs/install.md; each returns only the WorkStatuses labelled with its own WDS name.
func TestChartServiceAccountTwoWDSOneITS(t *testing.T) {
	its := framework.RunControlPlane(t, framework.WithoutCRDs())
	wds2 := framework.RunControlPlane(t, framework.WithoutCRDs())
	installChart(t, its, "--set", "wdsName=wds1", "--set", "webhooks.enabled=false")
	installChart(t, wds2, "--set", "wdsName=wds2", "--set", "webhooks.enabled=false")
	for _, cp := range []*framework.ControlPlane{its, wds2} {
		aggregateClusterRoles(t, cp.Client)
	}
	itsReader := itsReaderConfig(t, its)
	sa1 := serviceAccountConfig(t, its, releaseNS, serviceAccount)
	sa2 := serviceAccountConfig(t, wds2, releaseNS, serviceAccount)
	for i, cfg := range []aggregator.Config{
		{Options: aggregator.Options{WDSName: "wds1"}, WDS: sa1},
		{Options: aggregator.Options{WDSName: "wds2", ITSConfig: itsReader}, WDS: sa2},
	} {
		cfg.CoalesceDelay = 20 * time.Millisecond
		cfg.MetricsAddr, cfg.ProbeAddr = "0", "0"
		cfg.LeaderElection, cfg.LeaderElectionNamespace = true, releaseNS
		cfg.LeaderElectionID = fmt.Sprintf("statusfold-manager-%d.statusfold.dev", i+1)
		runManager(t, cfg, false)
	}

	addCluster(t, its.Client, "wec1", map[string]string{"name": "wec1"})
	addCluster(t, its.Client, "wec2", map[string]string{"name": "wec2"})
	ns := "shared"
	var objs []*deploymentInWDS
	for _, w := range []struct {
		name string
		cp   *framework.ControlPlane
	}{{"wds1", its}, {"wds2", wds2}} {
		c := w.cp.Client
		create(t, c, kubestellarDocCollectors()...)
		d := deployment(t, c, ns, "web", 3, nil)
		create(t, c, policy(ns, []string{"wec1", "wec2"}, clause("apps", "deployments", ns, []string{"web"}, multi, collectors("available-replicas-histogram"))))
		objs = append(objs, &deploymentInWDS{wds: w.name, c: c, d: d})
	}
	// The same object name in both WDSes; each WEC reports differently to each WDS.
	ready := map[string]map[string]int64{"wds1": {"wec1": 3, "wec2": 2}, "wds2": {"wec1": 1, "wec2": 1}}
	for _, o := range objs {
		for _, wec := range []string{"wec1", "wec2"} {
			ref := deploymentRef(o.d)
			wsName := fmt.Sprintf("%s-%s", o.wds, wec)
			reportNamed(t, its.Client, o.wds, wec, wsName, ref, deploymentStatus(3, ready[o.wds][wec], 1), applied(1))
		}
	}
	expectResult(t, objs[0].c, objs[0].d, ns, ns, "available-replicas-histogram", [][]string{{"2", "1"}, {"3", "1"}})
	expectReturn(t, objs[0].c, objs[0].d, "2", 2)
	expectResult(t, objs[1].c, objs[1].d, ns, ns, "available-replicas-histogram", [][]string{{"1", "2"}})
	expectReturn(t, objs[1].c, objs[1].d, "2", 1)
}

type deploymentInWDS struct {
	wds string
	c   client.Client
	d   *appsv1.Deployment
}

// installChart runs `helm install statusfold charts/statusfold` into cp's apiserver.
func installChart(t *testing.T, cp *framework.ControlPlane, values ...string) {
	t.Helper()
	args := append([]string{"install", "statusfold", framework.ChartDir(), "--namespace", releaseNS, "--create-namespace"}, values...)
	if _, err := framework.Helm(context.Background(), t, cp.Kubeconfig, args...); err != nil {
		t.Fatal(err)
	}
}

// aggregateClusterRoles does what kube-controller-manager's clusterrole-aggregation controller
// (which envtest does not run) does: it fills every ClusterRole that has an aggregationRule with
// the rules of the ClusterRoles its selectors match.
func aggregateClusterRoles(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	var roles rbacv1.ClusterRoleList
	if err := c.List(ctx, &roles); err != nil {
		t.Fatal(err)
	}
	for i := range roles.Items {
		agg := &roles.Items[i]
		if agg.AggregationRule == nil {
			continue
		}
		var rules []rbacv1.PolicyRule
		for _, sel := range agg.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range roles.Items {
				if r.Name != agg.Name && s.Matches(labels.Set(r.Labels)) {
					rules = append(rules, r.Rules...)
				}
			}
		}
		agg.Rules = rules
		if err := c.Update(ctx, agg); err != nil {
			t.Fatal(err)
		}
	}
}

// serviceAccountConfig returns a rest.Config that authenticates as the ServiceAccount with a
// token from the TokenRequest API (what the kubelet mounts into the pod). Every request the
// apiserver refuses to it fails the test when it ends (however it ends), naming the verb and
// the resource.
func serviceAccountConfig(t *testing.T, cp *framework.ControlPlane, ns, name string) *rest.Config {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	var tr *authenticationv1.TokenRequest
	eventually(t, "token for "+ns+"/"+name, func() error {
		tr, err = cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
		return err
	})
	denied := &deniedLog{}
	t.Cleanup(func() {
		if l := denied.list(); len(l) > 0 {
			t.Errorf("ServiceAccount %s/%s was refused %d request(s):\n%s", ns, name, len(l), strings.Join(l, "\n"))
		}
	})
	return &rest.Config{
		Host:            cp.Config.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.Config.CAData},
		BearerToken:     tr.Status.Token,
		QPS:             -1,
		WrapTransport:   denied.wrap,
	}
}

// itsReaderConfig creates, in the ITS, a ServiceAccount bound to the reads a manager of another
// WDS needs there (docs/install.md, "Several WDSes, one ITS"), and returns a config for it.
func itsReaderConfig(t *testing.T, its *framework.ControlPlane) *rest.Config {
	t.Helper()
	c := its.Client
	ns := "statusfold-its"
	ensureNamespace(t, c, ns)
	create(t, c,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wds2-reader"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "statusfold-its-reader"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"cluster.open-cluster-management.io"}, Resources: []string{"managedclusters"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"control.kubestellar.io"}, Resources: []string{"workstatuses"}, Verbs: []string{"get", "list", "watch"}},
		}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "statusfold-its-reader-wds2"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "statusfold-its-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "wds2-reader"}}},
	)
	return serviceAccountConfig(t, its, ns, "wds2-reader")
}

// deniedLog records every request that the apiserver answers with 403 Forbidden.
type deniedLog struct {
	mu   sync.Mutex
	seen []string
}

func (d *deniedLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusForbidden {
			return resp, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		msg := strings.TrimSpace(string(body))
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Message != "" {
			msg = st.Message
		}
		d.mu.Lock()
		d.seen = append(d.seen, fmt.Sprintf("%s %s: %s", req.Method, req.URL.Path, msg))
		d.mu.Unlock()
		return resp, nil
	})
}

// list returns the refusals, each once.
func (d *deniedLog) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(d.seen)
	slices.Sort(out)
	return slices.Compact(out)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// checkDenialsAreReported shows that the refusal log catches a missing permission, naming the
// verb and the resource: the ServiceAccount may not write ConfigMaps.
func checkDenialsAreReported(t *testing.T, sa *rest.Config) {
	t.Helper()
	cfg := rest.CopyConfig(sa)
	denied := &deniedLog{}
	cfg.WrapTransport = denied.wrap
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("creating a ConfigMap as the ServiceAccount: %v, want Forbidden", err)
	}
	l := denied.list()
	if len(l) == 0 || !strings.Contains(l[len(l)-1], `cannot create resource "configmaps"`) {
		t.Errorf("the refusal log does not name the verb and resource: %q", l)
	}
}

// runManager runs the manager as aggregator.Run does for `statusfold manager`, with the
// webhooks and built-in certificates when webhooksOn (as --webhook-certs=builtin).
func runManager(t *testing.T, cfg aggregator.Config, webhooksOn bool) {
	t.Helper()
	if webhooksOn {
		wopts := webhooks.Options{BuiltinCerts: &certs.Options{Namespace: releaseNS, CertDir: cfg.CertDir,
			DNSNames: certs.ServiceDNSNames(webhooks.ServiceName, releaseNS)}}
		cfg.SetupWebhooks = func(mgr manager.Manager) error { return webhooks.Setup(mgr, wopts) }
	}
	useTestLogger(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- aggregator.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

// routeWebhookService points the chart's webhook Service at the manager running in the test:
// with --enable-aggregator-routing the apiserver calls webhooks at an endpoint of the Service
// (which would be the pods'), in this test the host's address and the manager's webhook port.
// (Endpoints may not be loopback addresses.)
func routeWebhookService(t *testing.T, c client.Client, port int) {
	t.Helper()
	ip := hostIP(t)
	create(t, c,
		&corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: webhooks.ServiceName},
			Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: ip}},
				Ports: []corev1.EndpointPort{{Name: "webhook", Port: int32(port), Protocol: corev1.ProtocolTCP}}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: webhooks.ServiceName + "-test",
			Labels: map[string]string{discoveryv1.LabelServiceName: webhooks.ServiceName}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("webhook"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}}},
	)
}

func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatalf("no non-loopback IPv4 address among %v: the apiserver cannot reach the webhook", addrs)
	return ""
}

// checkWebhooksServeWithBuiltinCerts: the manager created the certificate Secret, injected its
// CA into both webhook configurations, and the apiserver calls the webhooks with it.
func checkWebhooksServeWithBuiltinCerts(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	eventually(t, "certificate Secret and CA injection", func() error {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: certs.DefaultSecretName}, &s); err != nil {
			return err
		}
		var v admissionregistrationv1.ValidatingWebhookConfiguration
		if err := c.Get(ctx, client.ObjectKey{Name: webhooks.ValidatingConfigurationName}, &v); err != nil {
			return err
		}
		var m admissionregistrationv1.MutatingWebhookConfiguration
		if err := c.Get(ctx, client.ObjectKey{Name: webhooks.MutatingConfigurationName}, &m); err != nil {
			return err
		}
		for _, w := range v.Webhooks {
			if !bytes.Equal(w.ClientConfig.CABundle, s.Data[certs.KeyCACert]) {
				return fmt.Errorf("validating webhook %s: caBundle is not the Secret's CA", w.Name)
			}
		}
		for _, w := range m.Webhooks {
			if !bytes.Equal(w.ClientConfig.CABundle, s.Data[certs.KeyCACert]) {
				return fmt.Errorf("mutating webhook %s: caBundle is not the Secret's CA", w.Name)
			}
		}
		return nil
	})
	checkWebhooksAdmit(t, c)
}

// checkWebhooksAdmit: the apiserver calls the webhooks over TLS: the collectors of KubeStellar's docs are
// admitted, and a bad one is rejected naming the field.
func checkWebhooksAdmit(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	bad := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{{Name: "x", Def: "returned.status.("}}}}
	eventually(t, "the validating webhook rejects a bad StatusCollector", func() error {
		err := c.Create(ctx, bad.DeepCopy())
		if err == nil {
			return fmt.Errorf("admitted %s", bad.Name)
		}
		if !strings.Contains(err.Error(), "spec.select[0].def") {
			return err
		}
		return nil
	})
	for _, o := range kubestellarDocCollectors() {
		eventually(t, "admit "+o.GetName(), func() error {
			err := c.Create(ctx, o)
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
}

func checkLease(t *testing.T, c client.Client) {
	t.Helper()
	eventually(t, "leader Lease", func() error {
		var lease coordinationv1.Lease
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: releaseNS, Name: aggregator.DefaultLeaderElectionID}, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("no holder")
		}
		return nil
	})
}

// widgetKind installs a user's CRD with a status subresource and, as docs/install.md says, the
// ClusterRole that lets statusfold write its status.
func widgetKind(t *testing.T, c client.Client) {
	t.Helper()
	preserve := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": *preserve, "status": *preserve}}}}},
		},
	}
	// The test scheme lacks apiextensions: create and read the CRD as unstructured.
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	create(t, c, u, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "statusfold-status-writer-widgets", Labels: map[string]string{"statusfold.dev/aggregate-to-status-writer": "true"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"example.com"}, Resources: []string{"widgets", "widgets/status"}, Verbs: []string{"patch"}}},
	})
	eventually(t, "CRD established", func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Name: crd.Name}, u); err != nil {
			return err
		}
		var got apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got); err != nil {
			return err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not established")
	})
}

// runScenario drives the scenario through the manager: Binding resolution (or, in external
// mode, Bindings written as another controller would), CombinedStatus, singleton return into a
// Deployment with a ContentClassifier pruning a field, multi-WEC return into a Deployment and a
// CRD kind, and the status of our own kinds.
func runScenario(t *testing.T, c client.Client, mode aggregator.BindingResolution) {
	t.Helper()
	ctx := context.Background()
	for _, w := range []string{"wec1", "wec2"} {
		addCluster(t, c, w, map[string]string{"name": w})
	}
	ns := "sa"
	single := deployment(t, c, ns, "single", 3, nil)
	multiD := deployment(t, c, ns, "multi", 3, nil)
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": ns, "name": "w"}, "spec": map[string]any{"size": 2}}}
	if err := c.Create(ctx, widget); err != nil {
		t.Fatal(err)
	}
	create(t, c,
		&controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: "deployments.v1.apps"},
			Spec: controlv1alpha1.ContentClassifierSpec{DontPropagatePointers: []controlv1alpha1.JSONPointer{{"status", "terminatingReplicas"}}}},
		policy("sa-single", []string{"wec1"}, clause("apps", "deployments", ns, []string{"single"}, singleton, collectors("count-wecs", "full-status"))),
		policy("sa-multi", []string{"wec1", "wec2"},
			clause("apps", "deployments", ns, []string{"multi"}, multi, collectors("available-replicas-histogram")),
			clause("example.com", "widgets", ns, []string{"w"}, multi)),
	)
	if mode == aggregator.BindingResolutionExternal {
		writeBinding(t, c, "sa-single", []string{"wec1"}, bindingEntry("apps", "deployments", ns, "single", false, "count-wecs", "full-status"))
		writeBinding(t, c, "sa-multi", []string{"wec1", "wec2"}, bindingEntry("apps", "deployments", ns, "multi", true, "available-replicas-histogram"),
			bindingEntry("example.com", "widgets", ns, "w", true))
	}
	bindingLists(t, c, "sa-single", ns, "single")
	bindingLists(t, c, "sa-multi", ns, "w")

	st := deploymentStatus(3, 2, 1)
	st["terminatingReplicas"] = 1
	report(t, c, "wec1", deploymentRef(single), st, applied(1))
	report(t, c, "wec1", deploymentRef(multiD), deploymentStatus(3, 3, 1), applied(1))
	report(t, c, "wec2", deploymentRef(multiD), deploymentStatus(3, 1, 1), applied(1))
	wref := controlv1alpha1.SourceRef{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespace: ns, Name: "w"}
	report(t, c, "wec1", wref, map[string]any{"ready": 2, "phase": "Running"}, applied(1))
	report(t, c, "wec2", wref, map[string]any{"ready": 5, "phase": "Running"}, applied(1))

	expectResult(t, c, single, "sa-single", ns, "count-wecs", [][]string{{"1"}})
	expectResult(t, c, single, "sa-single", ns, "full-status", [][]string{{"wec1", jsonCell(t, deploymentStatus(3, 2, 1))}})
	expectReturn(t, c, single, "1", 2)
	eventually(t, "pruned field not copied", func() error {
		u, err := getObject(c, single, ns, "single")
		if err != nil {
			return err
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "terminatingReplicas"); found {
			return fmt.Errorf("status.terminatingReplicas was returned: %v", u.Object["status"])
		}
		return nil
	})
	expectResult(t, c, multiD, "sa-multi", ns, "available-replicas-histogram", [][]string{{"1", "1"}, {"3", "1"}})
	expectReturn(t, c, multiD, "2", 1)
	eventually(t, "Widget aggregate", func() error {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("example.com/v1")
		u.SetKind("Widget")
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w"}, u); err != nil {
			return err
		}
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "ready")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if ready != 2 || phase != "Running" || u.GetLabels()[aggregator.LabelExecutingCount] != "2" {
			return fmt.Errorf("labels %v status %v", u.GetLabels(), u.Object["status"])
		}
		return nil
	})
	// Our own kinds' status.
	eventually(t, "StatusCollector and ContentClassifier status", func() error {
		var sc controlv1alpha1.StatusCollector
		if err := c.Get(ctx, client.ObjectKey{Name: "full-status"}, &sc); err != nil {
			return err
		}
		if sc.Status.ObservedGeneration != sc.Generation {
			return fmt.Errorf("StatusCollector status %+v", sc.Status)
		}
		var cc controlv1alpha1.ContentClassifier
		if err := c.Get(ctx, client.ObjectKey{Name: "deployments.v1.apps"}, &cc); err != nil {
			return err
		}
		if cc.Status.ObservedGeneration != cc.Generation {
			return fmt.Errorf("ContentClassifier status %+v", cc.Status)
		}
		return nil
	})
	expectCollectorsCondition(t, c, "sa-single", corev1.ConditionTrue, "")
}

func bindingEntry(group, resource, ns, name string, multiWEC bool, collectorNames ...string) controlv1alpha1.NamespaceScopeDownsyncClause {
	e := controlv1alpha1.NamespaceScopeDownsyncClause{}
	e.Group, e.Version, e.Resource, e.Namespace, e.Name = group, "v1", resource, ns, name
	e.StatusCollectors = collectorNames
	e.WantSingletonReportedState = !multiWEC
	e.WantMultiWECReportedState = multiWEC
	return e
}

// writeBinding writes a Binding as KubeStellar's binding controller would (external mode).
func writeBinding(t *testing.T, c client.Client, name string, wecs []string, entries ...controlv1alpha1.NamespaceScopeDownsyncClause) {
	t.Helper()
	b := &controlv1alpha1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, w := range wecs {
		b.Spec.Destinations = append(b.Spec.Destinations, controlv1alpha1.Destination{ClusterId: w})
	}
	b.Spec.Workload.NamespaceScope = entries
	create(t, c, b)
}

// checkMonitoringQueriesExported: every metric that the chart's Grafana dashboard and
// PrometheusRule query is exported on the manager's /metrics, with every label they select on
// (except namespace, which Prometheus adds when it scrapes), so they cannot drift apart.
func checkMonitoringQueriesExported(t *testing.T, url string) {
	t.Helper()
	queried := monitoringMetrics(t)
	if len(queried) < 5 {
		t.Fatalf("found only %v in the dashboard and alerts", queried)
	}
	eventually(t, "dashboard and alert metrics on /metrics", func() error {
		body, err := httpGet(url)
		if err != nil {
			return err
		}
		exported := exportedLabels(body)
		var missing []string
		for name, labelNames := range queried {
			have, ok := exported[name]
			if !ok {
				missing = append(missing, name)
				continue
			}
			for l := range labelNames {
				if l != "namespace" && !have[l] {
					missing = append(missing, name+" label "+l)
				}
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return fmt.Errorf("not exported: %v", missing)
		}
		return nil
	})
	t.Logf("%d metrics queried by the dashboard and alerts, all exported with their labels: %v", len(queried), keys(queried))
}

// monitoringMetrics returns the metrics (with the label names their selectors use) in the
// PromQL of files/dashboard.json and of the rendered PrometheusRule.
func monitoringMetrics(t *testing.T) map[string]map[string]bool {
	t.Helper()
	rules, err := framework.Helm(context.Background(), t, "", "template", "statusfold", framework.ChartDir(),
		"--set", "prometheusRule.enabled=true", "--show-only", "templates/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dashboard := readFileString(t, filepath.Join(framework.ChartDir(), "files", "dashboard.json"))
	var exprs []string
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(dashboard), &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, line := range strings.Split(rules, "\n") {
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "expr: "); ok {
			exprs = append(exprs, e)
		}
	}
	out := map[string]map[string]bool{}
	for _, e := range exprs {
		for name, labelNames := range promSelectors(e) {
			if out[name] == nil {
				out[name] = map[string]bool{}
			}
			for _, l := range labelNames {
				out[name][l] = true
			}
		}
	}
	return out
}

// promSelectors returns the metric names in a PromQL expression — identifiers followed by a
// selector `{…}` (every query here selects by label) — with the label names in the selectors.
func promSelectors(expr string) map[string][]string {
	out := map[string][]string{}
	for i := 0; i < len(expr); i++ {
		if expr[i] != '{' {
			continue
		}
		j := i
		for j > 0 && isIdent(expr[j-1]) {
			j--
		}
		end := strings.IndexByte(expr[i:], '}')
		if j == i || end < 0 {
			continue
		}
		name := expr[j:i]
		out[name] = append(out[name], labelNames(expr[i+1:i+end])...)
	}
	return out
}

// labelNames returns the names in `a="x", b=~"y"` (PromQL matchers) or `a="x",b="y"` (the
// exposition format); values are quoted and may hold commas and escaped quotes.
func labelNames(s string) []string {
	var names []string
	for i := 0; i < len(s); {
		for i < len(s) && (s[i] == ' ' || s[i] == ',') {
			i++
		}
		j := i
		for j < len(s) && isIdent(s[j]) {
			j++
		}
		if j == i {
			break
		}
		names = append(names, s[i:j])
		q := strings.IndexByte(s[j:], '"')
		if q < 0 {
			break
		}
		k := j + q + 1
		for k < len(s) && s[k] != '"' {
			if s[k] == '\\' {
				k++
			}
			k++
		}
		i = k + 1
	}
	return names
}

// exportedLabels reads a Prometheus text exposition: metric name → its label names.
func exportedLabels(body string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end < 0 {
			continue
		}
		name := line[:end]
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		if line[end] == '{' {
			if close := strings.LastIndexByte(line, '}'); close > end {
				for _, l := range labelNames(line[end+1 : close]) {
					out[name][l] = true
				}
			}
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func isIdent(b byte) bool {
	return b == '_' || b == ':' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')
}

func readFileString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPromSelectors(t *testing.T) {
	got := promSelectors(`histogram_quantile(0.99, sum by (le) (rate(a_bucket{namespace="x", where=~"a,b\"c"}[5m]))) > 0 and b{c!="d"} / c{}`)
	want := map[string][]string{"a_bucket": {"namespace", "where"}, "b": {"c"}, "c": nil}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("promSelectors = %v, want %v", got, want)
	}
	exp := exportedLabels("# HELP x y\nx_total{kind=\"a,b\",what=\"c\"} 1\nup 1\n")
	if !exp["x_total"]["kind"] || !exp["x_total"]["what"] || exp["up"] == nil || len(exp) != 2 {
		t.Errorf("exportedLabels = %v", exp)
	}
}
