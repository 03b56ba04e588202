package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/statusfold/statusfold/aggregator"
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
