package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/sizebudget"
	"github.com/statusfold/statusfold/test/framework"
)

// The helpers of the size budget tests: a fleet of WECs made and reported in parallel, and the
// checks of a trimmed CombinedStatus.

// unthrottled is a client of cp without client-side rate limiting: the fleet's hundreds of
// creates and updates would otherwise wait on client-go's default 5 requests per second.
func unthrottled(t *testing.T, cp *framework.ControlPlane) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS = -1
	c, err := client.New(cfg, client.Options{Scheme: cp.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// inParallel runs f(i) for i in [0, n) on 8 workers and fails the test with the first error.
func inParallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

func fleetName(i int) string { return fmt.Sprintf("wec%03d", i) }

// addFleet creates WECs fleetName(i) for i in [0, n), with the label fleet=<fleet> on the first
// in of them.
func addFleet(t *testing.T, c client.Client, n, in int, fleet string) {
	t.Helper()
	inParallel(t, n, func(i int) error {
		labels := map[string]string{"name": fleetName(i)}
		if i < in {
			labels["fleet"] = fleet
		}
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: fleetName(i), Labels: labels}}
		if err := c.Create(context.Background(), mc); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetName(i)}}
		if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

// setFleet puts the WECs of index [from, to) in fleet (or out of every fleet for "").
func setFleet(t *testing.T, c client.Client, from, to int, fleet string) {
	t.Helper()
	inParallel(t, to-from, func(i int) error {
		var mc clusterv1.ManagedCluster
		if err := c.Get(context.Background(), client.ObjectKey{Name: fleetName(from + i)}, &mc); err != nil {
			return err
		}
		if fleet == "" {
			delete(mc.Labels, "fleet")
		} else {
			mc.Labels["fleet"] = fleet
		}
		return c.Update(context.Background(), &mc)
	})
}

// reportAll makes WECs [0, n) report status(i) for the object of ref.
func reportAll(t *testing.T, c client.Client, n int, ref controlv1alpha1.SourceRef, status func(i int) map[string]any) {
	t.Helper()
	inParallel(t, n, func(i int) error {
		ws := &controlv1alpha1.WorkStatus{
			ObjectMeta: metav1.ObjectMeta{Namespace: fleetName(i), Name: fmt.Sprintf("%s-%s-%s", ref.Resource, ref.Namespace, ref.Name),
				Labels: map[string]string{controlv1alpha1.LabelOriginWDSName: wdsName}},
			Spec: controlv1alpha1.WorkStatusSpec{SourceRef: ref}, StatusDetails: applied(1),
		}
		if err := c.Create(context.Background(), ws); err != nil {
			return err
		}
		raw, err := json.Marshal(status(i))
		if err != nil {
			return err
		}
		ws.Status = controlv1alpha1.RawStatus{RawExtension: runtime.RawExtension{Raw: raw}}
		return c.Status().Update(context.Background(), ws)
	})
}

// bigStatus is a Deployment-shaped status of about kb KB, different per WEC.
func bigStatus(i, kb int) map[string]any {
	return map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "readyReplicas": int64(1),
		"availableReplicas": int64(1), "note": fmt.Sprintf("%03d", i) + strings.Repeat("n", kb*1024)}
}

// checkTrimmed checks a CombinedStatus result that should stand for total WECs: within budget,
// its rows the first WECs by name, whole, and — when not every WEC has a row — the marker saying
// how many rows were left out of how many. It returns the rows kept.
func checkTrimmed(cs *controlv1alpha1.CombinedStatus, name string, total, budget int) (int, error) {
	if n := sizebudget.EncodedSize(cs); n > budget {
		return 0, fmt.Errorf("CombinedStatus of %d bytes, over budget %d", n, budget)
	}
	r, err := result(cs, name)
	if err != nil {
		return 0, err
	}
	m, marked := sizebudget.ResultMarker(r)
	kept := len(r.Rows)
	switch {
	case kept == total && marked:
		return 0, fmt.Errorf("every row of %d kept, yet marked: %+v", total, m)
	case kept < total && !marked:
		return 0, fmt.Errorf("%d of %d rows, no marker", kept, total)
	case marked && (int(m.Row) != kept || int(m.Count) != total-kept || !strings.Contains(m.Error, fmt.Sprintf("of %d rows", total))):
		return 0, fmt.Errorf("marker %+v for %d of %d rows", m, kept, total)
	}
	for i, row := range cells(r) {
		if row[0] != fleetName(i) || !strings.Contains(row[1], fmt.Sprintf(`"note":"%03d`, i)) {
			return 0, fmt.Errorf("row %d is %s, want WEC %s whole", i, row[0], fleetName(i))
		}
	}
	return kept, nil
}
