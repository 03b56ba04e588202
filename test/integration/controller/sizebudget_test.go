package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/sizebudget"
	"github.com/statusfold/statusfold/test/framework"
)

// TestSizeBudget: what statusfold writes stays within the object size budget (docs/rules.md
// "Size budget"), says so in the object when it was trimmed, and never gets stuck on a write
// the apiserver refuses as too large. One control plane; each scenario runs its own manager.
func TestSizeBudget(t *testing.T) {
	cp := framework.RunControlPlane(t, framework.WithExtraCRDs(testCRDs()))
	c := unthrottled(t, cp)
	start := time.Now()
	addFleet(t, c, 250, 150, "big")
	t.Logf("250 WECs made in %s", time.Since(start).Round(time.Millisecond))

	t.Run("CombinedStatus150To250WECs", func(t *testing.T) { testFleetGrows(t, cp, c) })
	t.Run("TooLargeRefusalWritesSmallerAtOnce", func(t *testing.T) { testTooLarge(t, cp, c) })
	t.Run("ReturnedStatusOverBudget", func(t *testing.T) { testReturnOverBudget(t, cp, c) })
}

// fleetCollector selects every WEC's whole returned status, as in the field: the rows of a
// CombinedStatus grow with the WECs and their statuses.
func fleetCollector() *controlv1alpha1.StatusCollector {
	return &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "statuses"},
		Spec: controlv1alpha1.StatusCollectorSpec{Limit: 100000, Select: []controlv1alpha1.NamedExpression{
			{Name: "wec", Def: "inventory.name"}, {Name: "status", Def: "returned.status"}}}}
}

// testFleetGrows: 150 WECs report a status of about 12 KB each about one Deployment, then 100
// more WECs join the policy: the CombinedStatus stays within the default budget with the first
// WECs' rows whole and a marker counting the rest; when WECs leave until the rows fit, the
// marker goes.
func testFleetGrows(t *testing.T, cp *framework.ControlPlane, c client.Client) {
	const ns = "big"
	ensureNamespace(t, c, ns)
	d := deployment(t, c, ns, "web", 1, nil)
	bp := &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "big"}}
	bp.Spec.ClusterSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{"fleet": "big"}}}
	clause("apps", "deployments", ns, []string{"web"}, collectors("statuses"))(bp)
	create(t, c, fleetCollector(), bp)
	reportAll(t, c, 250, deploymentRef(d), func(i int) map[string]any { return bigStatus(i, 12) })
	before := counter(t, "statusfold_trimmed_total", "kind", "combinedstatus")
	_, stop := startManager(t, cp, aggregator.Options{})
	defer stop()

	budget := sizebudget.DefaultBytes
	for _, total := range []int{150, 250} {
		if total == 250 {
			setFleet(t, c, 150, 250, "big")
		}
		start := time.Now()
		var kept int
		eventually(t, fmt.Sprintf("CombinedStatus of %d WECs within budget", total), func() error {
			cs, err := combinedStatus(c, d, "big", ns)
			if err != nil {
				return err
			}
			kept, err = checkTrimmed(cs, "statuses", total, budget)
			if err == nil && kept == total {
				return fmt.Errorf("all %d rows kept: not over budget", total)
			}
			if err == nil {
				err = storedWithinEtcdLimit(t, cs)
			}
			return err
		})
		t.Logf("%d WECs: %d rows kept, the marker counts %d left out (%s)", total, kept, total-kept, time.Since(start).Round(time.Millisecond))
	}
	expectEvent(t, c, ns, "web", "OverSizeBudget", "rows left out")
	if after := counter(t, "statusfold_trimmed_total", "kind", "combinedstatus"); after < before+1 {
		t.Errorf("statusfold_trimmed_total{kind=combinedstatus} went from %v to %v", before, after)
	}

	setFleet(t, c, 60, 250, "") // WECs leave: 60 rows of 12 KB fit
	eventually(t, "CombinedStatus of 60 WECs whole, unmarked", func() error {
		cs, err := combinedStatus(c, d, "big", ns)
		if err != nil {
			return err
		}
		kept, err := checkTrimmed(cs, "statuses", 60, budget)
		if err == nil && kept != 60 {
			err = fmt.Errorf("%d rows of 60", kept)
		}
		return err
	})
}

// storedWithinEtcdLimit checks that the CombinedStatus as stored — managed fields and every
// server-set field included — is below etcd's default request limit, with the margin logged.
func storedWithinEtcdLimit(t *testing.T, cs *controlv1alpha1.CombinedStatus) error {
	b, err := json.Marshal(cs)
	if err != nil {
		return err
	}
	mf, _ := json.Marshal(cs.ManagedFields)
	if len(b) >= sizebudget.EtcdRequestLimit {
		return fmt.Errorf("stored CombinedStatus of %d bytes reaches etcd's limit %d", len(b), sizebudget.EtcdRequestLimit)
	}
	t.Logf("stored CombinedStatus: %d bytes, of which managed fields %d; etcd's limit %d", len(b), len(mf), sizebudget.EtcdRequestLimit)
	return nil
}

// testTooLarge: with a budget above what the apiserver and etcd accept (a cluster configured
// lower than the budget assumes), the refused write is made smaller at once: the CombinedStatus
// of 250 WECs of about 12 KB (≈3 MB) is written, trimmed under a lowered budget, within the
// usual wait, and the refusal is reported.
func testTooLarge(t *testing.T, cp *framework.ControlPlane, c client.Client) {
	const ns = "big"
	setFleet(t, c, 0, 250, "big")
	_, stop := startManager(t, cp, aggregator.Options{SizeBudget: 4 << 20})
	defer stop()
	var d appsv1.Deployment
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	eventually(t, "CombinedStatus of 250 WECs written under a lowered budget", func() error {
		cs, err := combinedStatus(c, &d, "big", ns)
		if err != nil {
			return err
		}
		r, err := result(cs, "statuses")
		if err != nil {
			return err
		}
		m, marked := sizebudget.ResultMarker(r)
		if !marked || int(m.Row)+int(m.Count) != 250 || strings.Contains(m.Error, fmt.Sprint(4<<20)) {
			return fmt.Errorf("%d rows, marker %+v: want 250 WECs counted under a budget below %d", len(r.Rows), m, 4<<20)
		}
		return storedWithinEtcdLimit(t, cs)
	})
	t.Logf("written after the refusals in %s", time.Since(start).Round(time.Millisecond))
	expectEvent(t, c, ns, "web", "ObjectTooLarge", "written again at once")
	if evs, err := events(c, ns, "web", "ObjectTooLarge"); err == nil && len(evs) > 0 {
		t.Logf("Event ObjectTooLarge: %.300s", evs[0].Note)
	}
}
