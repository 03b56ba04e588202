package hostile

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
	"github.com/statusfold/statusfold/webhooks"
)

// entryEnv is a control plane whose apiserver calls the webhooks of a `statusfold manager` child
// process, which also runs the controllers against it.
type entryEnv struct {
	cp  *framework.ControlPlane
	mgr *managerProcess
	// baseline is the manager's resident memory once it serves, before any case.
	baseline        uint64
	admissionWorst  worst
	controllerWorst worst
	// largeWrites are the cases whose input or returned status is large: when their results
	// and their returned status were seen.
	largeWrites []string
}

// wdsName is the WDS the manager serves; WorkStatuses carry it.
const wdsName = "wds1"

// caseNamespace holds the cases' workload objects.
const caseNamespace = "hostile"

func startEntryEnv(t *testing.T) *entryEnv {
	t.Helper()
	statusfoldBinary(t) // built before the control plane starts
	cp := framework.RunControlPlane(t, framework.WithExtraCRDs(filepath.Join("testdata", "crds")))
	ctx := context.Background()
	// envtest makes the serving certificate and its CA; the configurations call the child by URL.
	certs := envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := certs.PrepWithoutInstalling(); err != nil {
		t.Fatal(err)
	}
	base := "https://127.0.0.1:" + strconv.Itoa(certs.LocalServingPort)
	v, m := webhooks.Configurations(webhooks.URLClientConfig(base, certs.LocalServingCAData))
	for _, obj := range []client.Object{v, m, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: caseNamespace}}} {
		if err := cp.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	mgr := startManagerProcess(t, cp, "--wds-name="+wdsName, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--coalesce-delay=20ms", "--memory-limit="+memoryLimit, "--collector-time-budget="+collectorBudget.String(),
		"--webhook-certs=files", "--webhook-cert-dir="+certs.LocalServingCertDir,
		"--webhook-port="+strconv.Itoa(certs.LocalServingPort))
	e := &entryEnv{cp: cp, mgr: mgr}
	e.waitServing(t)
	rss, _, err := mgr.memory()
	if err != nil {
		t.Fatal(err)
	}
	e.baseline = rss
	e.admissionWorst.baseline, e.controllerWorst.baseline = rss, rss
	t.Logf("manager serving; resident memory %d MiB", rss>>20)
	return e
}

// waitServing waits until the apiserver reaches the webhooks (a server-side dry run of a valid
// collector succeeds) and the controllers have started (a collector's status is written).
func (e *entryEnv) waitServing(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	probe := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{{Name: "n", Type: "COUNT"}}}}
	var err error
	if wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if !e.mgr.alive() {
			return false, fmt.Errorf("the manager exited")
		}
		err = e.cp.Client.Create(ctx, probe.DeepCopy())
		return err == nil, nil
	}) != nil {
		t.Fatalf("webhooks not reachable: %v", err)
	}
	if wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var sc controlv1alpha1.StatusCollector
		err = e.cp.Client.Get(ctx, client.ObjectKey{Name: "probe"}, &sc)
		return err == nil && len(sc.Status.Conditions) > 0, nil
	}) != nil {
		t.Fatalf("the controllers did not report the probe collector's status: %v", err)
	}
}
