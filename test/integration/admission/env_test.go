package admission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks"
)

// env is a control plane whose apiserver calls an in-process webhook server.
type env struct {
	cp      *framework.ControlPlane
	rotator *certs.Rotator
	addr    string // host:port of the webhook server
}

const certNamespace = "statusfold-system"

// startAdmission starts a control plane, registers statusfold's webhook configurations (by URL,
// on 127.0.0.1), creates the certificates with the built-in rotator (which injects the CA
// bundle), and runs a manager serving the webhooks until the test ends.
func startAdmission(t *testing.T) *env {
	t.Helper()
	cp := framework.RunControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	port := framework.FreePort(t)
	base := "https://127.0.0.1:" + strconv.Itoa(port)

	v, m := webhooks.Configurations(webhooks.URLClientConfig(base, nil))
	for _, obj := range []client.Object{v, m, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certNamespace}}} {
		if err := cp.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	rot, err := certs.New(ctx, cp.Client, certs.Options{
		Namespace: certNamespace, DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ValidatingWebhookConfigurations: []string{webhooks.ValidatingConfigurationName},
		MutatingWebhookConfigurations:   []string{webhooks.MutatingConfigurationName},
		BundlePropagationDelay:          2 * time.Second,
		InjectInterval:                  500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port,
			TLSOpts: []func(*tls.Config){rot.TLSOption()}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(rot); err != nil {
		t.Fatal(err)
	}
	return serve(t, ctx, cancel, cp, mgr, rot, port)
}

// serve registers the webhooks with mgr, runs it until the test ends, and waits until the
// apiserver reaches the webhooks.
func serve(t *testing.T, ctx context.Context, cancel context.CancelFunc, cp *framework.ControlPlane,
	mgr manager.Manager, rot *certs.Rotator, port int) *env {
	t.Helper()
	if err := webhooks.Setup(mgr, webhooks.Options{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	e := &env{cp: cp, rotator: rot, addr: fmt.Sprintf("127.0.0.1:%d", port)}
	e.waitServing(t)
	return e
}

// reinstall creates the webhook configurations again, without a CA bundle, and waits until the
// running rotator has injected it and the apiserver calls the webhooks.
func (e *env) reinstall(t *testing.T) {
	t.Helper()
	v, m := webhooks.Configurations(webhooks.URLClientConfig("https://"+e.addr, nil))
	for _, obj := range []client.Object{v, m} {
		if err := e.cp.Client.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	if wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		bad := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "bad-probe"}, Spec: controlv1alpha1.StatusCollectorSpec{Limit: 5}}
		err := e.cp.Client.Create(ctx, bad, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "is invalid"), nil
	}) != nil {
		t.Fatal("webhooks not called after reinstalling their configurations")
	}
}

// probe is a server-side dry run of a valid collector: it succeeds only when the apiserver
// reaches both webhooks.
func (e *env) probe() error {
	sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: "COUNT"}}}}
	return e.cp.Client.Create(context.Background(), sc, client.DryRunAll)
}

// waitServing waits until the apiserver reaches the webhooks.
func (e *env) waitServing(t *testing.T) {
	t.Helper()
	var err error
	if wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err = e.probe()
		return err == nil, nil
	}) != nil {
		t.Fatalf("webhook not reachable: %v", err)
	}
}

// kubectl runs the matching kubectl with stdin and returns its combined stdout and stderr, and
// whether it exited 0.
func (e *env) kubectl(t *testing.T, stdin string, args ...string) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, errOut, err := e.cp.Kubectl(ctx, []byte(stdin), args...)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return strings.TrimSpace(out + errOut), err == nil
}

// servedSerial is the serial number of the certificate the webhook server presents now.
func (e *env) servedSerial(t *testing.T) string {
	t.Helper()
	c, err := tls.Dial("tcp", e.addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reading the certificate
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func admissionGVK(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: kind}
}
