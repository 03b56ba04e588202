package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// The noisy WEC of TestNoisyWECCannotStarveOthers: its objects, and the length of the list it
// reports for each of them every second.
const noisyObjects, noisyListLen = 4, 30000

// quietWECs report the quiet objects; quietSamples updates are timed per phase.
var quietWECs = []string{"quiet1", "quiet2", "quiet3"}

const quietObjects, quietSamples = 2, 12

// noisyWaitTimeout bounds the wait for one quiet update.
const noisyWaitTimeout = 20 * time.Second

// TestNoisyWECCannotStarveOthers: one WEC rewrites the statuses of its objects every second
// with 30,000-element lists (about 390 KB each, over the default cap on a reported status), while
// the other WECs' updates are timed until their CombinedStatus shows them: first with the noisy
// WEC quiet (the baseline), then while it writes. With the cap and fair queuing across WECs, the
// other WECs' updates stay prompt; the noisy WEC's rows say why they are not evaluated, and an
// object it shares with a quiet WEC does not look healthier than that WEC alone.
//
// STATUSFOLD_UNFAIR=1 runs it with the cap, the object budget and fair queuing off (the test then
// fails: the noisy WEC's decoding and evaluations delay every other WEC); STATUSFOLD_UNFAIR=cap
// turns off the cap only, =queue fair queuing only.
func TestNoisyWECCannotStarveOthers(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	opts := aggregator.Options{}
	off := os.Getenv("STATUSFOLD_UNFAIR")
	if off != "" && off != "queue" {
		opts.MaxReportedStatusBytes = aggregator.NoStatusCap
	}
	if off != "" && off != "cap" {
		opts.UnfairWECs = true
	}
	if off != "" && off != "cap" && off != "queue" {
		opts.ObjectTimeBudget = time.Hour
	}
	unfair := opts.MaxReportedStatusBytes == aggregator.NoStatusCap
	f := newNoisyFixture(t, c, cp.Config)
	startManager(t, cp, opts)
	f.converge()

	baseline := f.timeQuietUpdates("baseline")
	stop := f.startNoisy(unfair)
	noisy := f.timeQuietUpdates("noisy")
	if !unfair {
		f.expectOversizeRows()
	}
	stop()
	b, n := median(baseline), median(noisy)
	t.Logf("quiet WECs' update → CombinedStatus: median %s without the noisy WEC, %s with it (max %s); noisy writes: %d; "+
		"the quiet updates' own writes: median %s, then %s", b, n, slices.Max(noisy), f.noisyWrites(),
		median(f.writeRTT[:quietSamples]), median(f.writeRTT[quietSamples:]))
	// Generous: on a loaded 2-core machine under -race the noisy phase's median was 0.02–1.6 s
	// with the bounds on (the ITS watch still reads every large WorkStatus, in order, and the
	// Pacer delays writes under that load), and over ten seconds with them off.
	if limit := max(10*b, 5*time.Second); n > limit {
		t.Errorf("median latency of the quiet WECs' updates %s with the noisy WEC, over %s (baseline %s)", n, limit, b)
	}
}

// noisyFixture is TestNoisyWECCannotStarveOthers's cluster.
type noisyFixture struct {
	t      *testing.T
	c      client.Client
	cfg    *rest.Config
	noisy  []*appsv1.Deployment // reported by the noisy WEC only
	quiet  []*appsv1.Deployment // reported by the quiet WECs
	shared *appsv1.Deployment   // reported by the noisy WEC and quiet1, status returned (multi)
	value  int
	writes int
	// writeRTT: how long each quiet update's own write (a GET and a status update) took
	writeRTT []time.Duration
	mu       sync.Mutex
}

func newNoisyFixture(t *testing.T, c client.Client, cfg *rest.Config) *noisyFixture {
	f := &noisyFixture{t: t, c: c, cfg: cfg, value: 10}
	for _, w := range append([]string{"noisy"}, quietWECs...) {
		addCluster(t, c, w, map[string]string{"name": w})
	}
	create(t, c,
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "fair-max"},
			Spec: controlv1alpha1.StatusCollectorSpec{CombinedFields: []controlv1alpha1.NamedAggregator{
				{Name: "count", Type: controlv1alpha1.AggregatorTypeCount},
				{Name: "max", Type: controlv1alpha1.AggregatorTypeMax, Subject: expr("returned.status.availableReplicas")}}}},
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "fair-items"},
			Spec: controlv1alpha1.StatusCollectorSpec{Select: []controlv1alpha1.NamedExpression{
				{Name: "sevens", Def: "has(returned.status.items) ? returned.status.items.filter(x, x.endsWith('7')).size() : 0"}}}})
	for i := range noisyObjects {
		f.noisy = append(f.noisy, deployment(t, c, "noisy", fmt.Sprintf("n%02d", i), 1, nil))
	}
	for i := range quietObjects {
		f.quiet = append(f.quiet, deployment(t, c, "quiet", fmt.Sprintf("q%02d", i), 1, nil))
	}
	f.shared = deployment(t, c, "shared", "s", 1, nil)
	create(t, c,
		policy("noisy", []string{"noisy"}, clause("apps", "deployments", "noisy", nil, collectors("fair-items"))),
		policy("quiet", quietWECs, clause("apps", "deployments", "quiet", nil, collectors("fair-max"))),
		policy("shared", []string{"noisy", "quiet1"}, clause("apps", "deployments", "shared", nil, multi, collectors("fair-max"))))
	return f
}

// converge has every WEC report once, small statuses, and waits for the CombinedStatuses.
func (f *noisyFixture) converge() {
	t, c := f.t, f.c
	for _, d := range f.noisy {
		report(t, c, "noisy", deploymentRef(d), deploymentStatus(1, 1, 1), applied(1))
	}
	for _, d := range f.quiet {
		for _, w := range quietWECs {
			report(t, c, w, deploymentRef(d), deploymentStatus(1, 1, 1), applied(1))
		}
	}
	for _, w := range []string{"noisy", "quiet1"} {
		report(t, c, w, deploymentRef(f.shared), deploymentStatus(1, 1, 1), applied(1))
	}
	for _, d := range f.quiet {
		expectResult(t, c, d, "quiet", "quiet", "fair-max", [][]string{{"3", "1"}})
	}
	expectResult(t, c, f.noisy[len(f.noisy)-1], "noisy", "noisy", "fair-items", [][]string{{"0"}})
	expectResult(t, c, f.shared, "shared", "shared", "fair-max", [][]string{{"2", "1"}})
	f.expectSharedReady(1)
}

// timeQuietUpdates sends quietSamples updates from the quiet WECs, one at a time, and returns
// the time each took to show in its CombinedStatus (an update not shown within noisyWaitTimeout
// fails the test and counts as that long).
func (f *noisyFixture) timeQuietUpdates(phase string) []time.Duration {
	t, c := f.t, f.c
	var out []time.Duration
	for i := range quietSamples {
		d, w := f.quiet[i%len(f.quiet)], quietWECs[i%len(quietWECs)]
		f.value++
		start := time.Now()
		reportStatus(t, c, w, deploymentRef(d), deploymentStatus(1, int64(f.value), 1))
		f.writeRTT = append(f.writeRTT, time.Since(start))
		want := strconv.Itoa(f.value)
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, noisyWaitTimeout, true, func(context.Context) (bool, error) {
			cs, err := combinedStatus(c, d, "quiet", "quiet")
			if err != nil {
				return false, nil
			}
			r, err := result(cs, "fair-max")
			return err == nil && len(cells(r)) == 1 && cells(r)[0][1] == want, nil
		})
		if err != nil {
			t.Errorf("%s: update %d of %s not in %s's CombinedStatus within %s", phase, i, w, d.Name, noisyWaitTimeout)
		}
		out = append(out, time.Since(start))
	}
	return out
}

// startNoisy starts the noisy WEC: every second it rewrites each of its WorkStatuses (its own
// objects' and the shared one's) with a new 30,000-element list. It returns the function that
// stops it. It returns once the noisy WEC's reports count: their row errors show (with the cap),
// or it has written each of its statuses once (without).
func (f *noisyFixture) startNoisy(unfair bool) (stop func()) {
	items := make([]string, noisyListLen)
	for i := range items {
		items[i] = fmt.Sprintf("item-%05d", i)
	}
	tail, err := json.Marshal(items[1:])
	if err != nil {
		f.t.Fatal(err)
	}
	// The noisy WEC's writes are merge patches of pre-encoded bodies whose answers are not decoded:
	// the test's own JSON work (under -race) would otherwise take the CPU it measures.
	rc := kubernetes.NewForConfigOrDie(f.cfg).CoreV1().RESTClient()
	var paths []string
	for _, d := range append(slices.Clone(f.noisy), f.shared) {
		paths = append(paths, fmt.Sprintf("/apis/%s/namespaces/noisy/%s/deployments-%s-%s/status",
			controlv1alpha1.GroupVersion, controlv1alpha1.ResourceWorkStatuses, d.Namespace, d.Name))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for tick := 0; ctx.Err() == nil; tick++ {
			next := time.Now().Add(time.Second)
			body := fmt.Appendf(nil, `{"status":{"availableReplicas":1,"observedGeneration":1,"items":["tick-%d",%s}}`, tick, tail[1:])
			for _, p := range paths {
				if err := rc.Patch(types.MergePatchType).AbsPath(p).Body(body).Do(ctx).Error(); err != nil && ctx.Err() == nil {
					f.t.Errorf("noisy WEC: %v", err)
					return
				}
				f.mu.Lock()
				f.writes++
				f.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Until(next)):
			}
		}
	}()
	if unfair {
		eventually(f.t, "a round of the noisy WEC's writes", func() error {
			if n := f.noisyWrites(); n < len(paths) {
				return fmt.Errorf("%d writes", n)
			}
			return nil
		})
	} else {
		expectRowError(f.t, f.c, f.shared, "shared", "fair-max", "noisy", "status not evaluated")
	}
	return func() { cancel(); <-done }
}

func (f *noisyFixture) noisyWrites() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// expectOversizeRows checks the noisy WEC's rows: a row error with the cap's exact text and no
// row, and the shared object's returned status counting the noisy WEC as unknown (ready 0), not
// absent (quiet1's ready 1 alone).
func (f *noisyFixture) expectOversizeRows() {
	cs := expectRowError(f.t, f.c, f.noisy[0], "noisy", "fair-items", "noisy", "status not evaluated: the reported status is ")
	r, _ := result(cs, "fair-items")
	msg := r.RowErrors[0].Error
	if !strings.HasSuffix(msg, fmt.Sprintf(" bytes, over the cap of %d bytes on a reported status", aggregator.DefaultMaxReportedStatusBytes)) || len(r.Rows) != 0 {
		f.t.Errorf("noisy row: error %q and %d rows, want the cap's error and no row", msg, len(r.Rows))
	}
	f.expectSharedReady(0)
}

// expectSharedReady waits until the shared object's returned readyReplicas is ready.
func (f *noisyFixture) expectSharedReady(ready int64) {
	eventually(f.t, fmt.Sprintf("shared object's returned readyReplicas %d", ready), func() error {
		var d appsv1.Deployment
		if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(f.shared), &d); err != nil {
			return err
		}
		if int64(d.Status.ReadyReplicas) != ready {
			return fmt.Errorf("readyReplicas %d", d.Status.ReadyReplicas)
		}
		return nil
	})
}

// expectRowError waits until obj's CombinedStatus of policy has, in result collector, a row
// error of wec on the column "" whose text starts with prefix, and returns the CombinedStatus.
func expectRowError(t *testing.T, c client.Client, obj client.Object, policyName, collector, wec, prefix string) *controlv1alpha1.CombinedStatus {
	t.Helper()
	var cs *controlv1alpha1.CombinedStatus
	eventually(t, fmt.Sprintf("%s's row error in %s's CombinedStatus", wec, obj.GetName()), func() error {
		var err error
		if cs, err = combinedStatus(c, obj, policyName, obj.GetNamespace()); err != nil {
			return err
		}
		r, err := result(cs, collector)
		if err != nil {
			return err
		}
		for _, e := range r.RowErrors {
			if e.WEC.ClusterId == wec && e.ColumnName == "" && strings.HasPrefix(e.Error, prefix) {
				return nil
			}
		}
		return fmt.Errorf("row errors %+v", r.RowErrors)
	})
	return cs
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
