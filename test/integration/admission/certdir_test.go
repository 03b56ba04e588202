package admission

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/statusfold/statusfold/certs"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks"
)

// TestBuiltinCertsThroughCertDir runs the wiring `statusfold manager` and local mode use: the
// webhook server reads tls.crt/tls.key from its CertDir (controller-runtime's certificate
// watcher), and webhooks.SetupBuiltinCerts keeps them there, in memory otherwise, injecting the
// CA bundle into the configurations. A rotation is picked up without a restart and without a
// failed admission.
func TestBuiltinCertsThroughCertDir(t *testing.T) {
	cp := framework.RunControlPlane(t)
	ctx, cancel := context.WithCancel(context.Background())
	port := framework.FreePort(t)
	certDir := t.TempDir()
	v, m := webhooks.Configurations(webhooks.URLClientConfig("https://127.0.0.1:"+strconv.Itoa(port), nil))
	for _, obj := range []client.Object{v, m} {
		if err := cp.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme: cp.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	rot, err := webhooks.SetupBuiltinCerts(mgr, certs.Options{IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, CertDir: certDir})
	if err != nil {
		t.Fatal(err)
	}
	e := serve(t, ctx, cancel, cp, mgr, rot, port)

	out, ok := e.kubectl(t, yamlDoc(badObjects[1].yaml), "create", "-f", "-")
	if ok || !strings.Contains(out, badObjects[1].want[0]) {
		t.Fatalf("bad collector over the CertDir certificate: %s", out)
	}

	var requests, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			requests.Add(1)
			if err := e.probe(); err != nil {
				failures.Add(1)
				t.Logf("admission failed: %v", err)
			}
		}
	}()
	before := e.servedSerial(t)
	if err := rot.Rotate(ctx, false); err != nil {
		t.Fatal(err)
	}
	if wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return e.servedSerial(t) != before, nil
	}) != nil {
		t.Fatal("the webhook server did not pick up the rotated certificate from its CertDir")
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("%d admission requests while the certificate watcher reloaded, %d failed", requests.Load(), failures.Load())
	if failures.Load() > 0 {
		t.Errorf("%d admissions failed", failures.Load())
	}
}
