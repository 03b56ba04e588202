package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Names of the load test's objects in the WDS.
const (
	ObjectNamespace = "load"
	BindingPolicy   = "load"
	// MarkerCollector's single MAX column is the largest sequence number reported by any WEC:
	// it tells which writes a CombinedStatus reflects.
	MarkerCollector = "load-marker"
	labelApp        = "app"
	labelMulti      = "multi"
)

var (
	deploymentGVR     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	managedClusterGVR = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	collectorGVR      = controlv1alpha1.GroupVersion.WithResource("statuscollectors")
	bindingPolicyGVR  = controlv1alpha1.GroupVersion.WithResource("bindingpolicies")
	combinedStatusGVR = controlv1alpha1.GroupVersion.WithResource("combinedstatuses")
)

// Fixture is the statusfold part's objects: W WECs (ManagedClusters with mailbox namespaces),
// M Deployments going to every WEC, a collector mix, one BindingPolicy, and W×M WorkStatuses.
type Fixture struct {
	WECs, Objects int
	// MultiEvery: every MultiEvery-th object also gets its status aggregated from all WECs
	// (wantMultiWECReportedState); 0 means none.
	MultiEvery int
	Workers    int
	Logf       func(format string, args ...any)

	dyn    dynamic.Interface
	writer *seqWriter
	locks  []sync.Mutex // one per object: writes to one object are issued in sequence order
	maxSeq []int64      // per object, the largest sequence number written
	mu     sync.Mutex
}

// IsMulti says whether object j gets its status aggregated.
func (f *Fixture) IsMulti(j int) bool { return f.MultiEvery > 0 && j%f.MultiEvery == 0 }

func (f *Fixture) logf(format string, args ...any) {
	if f.Logf != nil {
		f.Logf(format, args...)
	}
}

// Collectors is the collector mix: a COUNT, a groupBy histogram, a select with a filter, and the
// marker.
func Collectors() []*unstructured.Unstructured {
	mk := func(name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind("StatusCollector"))
		u.SetName(name)
		return u
	}
	return []*unstructured.Unstructured{
		mk("load-count", map[string]any{"combinedFields": []any{map[string]any{"name": "count", "type": "COUNT"}}}),
		mk("load-histogram", map[string]any{
			"groupBy":        []any{map[string]any{"name": "ready", "def": "returned.status.readyReplicas"}},
			"combinedFields": []any{map[string]any{"name": "count", "type": "COUNT"}},
		}),
		mk("load-not-ready", map[string]any{
			"filter": "returned.status != null && returned.status.readyReplicas < obj.spec.replicas",
			"select": []any{
				map[string]any{"name": "wec", "def": "inventory.name"},
				map[string]any{"name": "ready", "def": "returned.status.readyReplicas"},
			},
		}),
		mk(MarkerCollector, map[string]any{"combinedFields": []any{map[string]any{"name": "seq", "type": "MAX", "subject": "returned.status." + SeqField}}}),
	}
}

// Setup creates everything but the WorkStatuses' statuses, then writes one status per
// WorkStatus. It returns the time the WorkStatus phase took.
func (f *Fixture) Setup(ctx context.Context, cfg *rest.Config) (time.Duration, error) {
	dyn, err := dynamic.NewForConfig(unthrottled(cfg))
	if err != nil {
		return 0, err
	}
	f.dyn = dyn
	f.writer = &seqWriter{ws: dyn.Resource(WorkStatusGVR), workers: max(f.Workers, 1)}
	f.locks = make([]sync.Mutex, f.Objects)
	f.maxSeq = make([]int64, f.Objects)

	create := func(gvr schema.GroupVersionResource, u *unstructured.Unstructured) error {
		var err error
		if ns := u.GetNamespace(); ns != "" {
			_, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		} else {
			_, err = dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
		}
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err := create(namespaceGVR, namespaceObject(ObjectNamespace)); err != nil {
		return 0, err
	}
	for _, c := range Collectors() {
		if err := create(collectorGVR, c); err != nil {
			return 0, err
		}
	}
	err = f.writer.parallel(ctx, f.WECs, func(ctx context.Context, i int) error {
		if err := create(namespaceGVR, namespaceObject(WECName(i))); err != nil {
			return err
		}
		mc := &unstructured.Unstructured{}
		mc.SetGroupVersionKind(schema.GroupVersionKind{Group: managedClusterGVR.Group, Version: "v1", Kind: "ManagedCluster"})
		mc.SetName(WECName(i))
		mc.SetLabels(map[string]string{"load": "true", "region": fmt.Sprintf("region-%d", i%5)})
		return create(managedClusterGVR, mc)
	})
	if err != nil {
		return 0, fmt.Errorf("WECs: %w", err)
	}
	err = f.writer.parallel(ctx, f.Objects, func(ctx context.Context, j int) error {
		return create(deploymentGVR, f.deployment(j))
	})
	if err != nil {
		return 0, fmt.Errorf("deployments: %w", err)
	}
	if err := create(bindingPolicyGVR, bindingPolicy()); err != nil {
		return 0, fmt.Errorf("binding policy: %w", err)
	}
	f.logf("fixture: %d WECs, %d Deployments, collectors and BindingPolicy created", f.WECs, f.Objects)

	start := time.Now()
	n := f.WECs * f.Objects
	err = f.writer.parallel(ctx, n, func(ctx context.Context, k int) error {
		i, j := k%f.WECs, k/f.WECs
		ws := WorkStatus(WDSName, WECName(i), ObjectNamespace, ObjectName(j))
		if _, err := f.writer.ws.Namespace(ws.GetNamespace()).Create(ctx, ws, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		_, _, err := f.Write(ctx, i, j, 3)
		if k > 0 && k%10000 == 0 {
			f.logf("fixture: %d of %d WorkStatuses written (%.0f/s)", k, n, float64(k)/time.Since(start).Seconds())
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("workstatuses: %w", err)
	}
	took := time.Since(start)
	f.logf("fixture: %d WorkStatuses created with status in %s (%.0f/s)", n, took.Round(time.Second), float64(n)/took.Seconds())
	return took, nil
}

// Write writes a new status (a new sequence number, ready replicas as given) into the WorkStatus
// of object j in WEC i, and returns its sequence number and the time it was sent.
func (f *Fixture) Write(ctx context.Context, i, j int, ready int64) (int64, time.Time, error) {
	f.locks[j].Lock()
	defer f.locks[j].Unlock()
	tg := target{namespace: WECName(i), object: ObjectName(j), name: WorkStatus(WDSName, WECName(i), ObjectNamespace, ObjectName(j)).GetName(), idx: j}
	seq, sent, err := f.writer.writeReady(ctx, tg, ready)
	if err == nil {
		f.mu.Lock()
		f.maxSeq[j] = max(f.maxSeq[j], seq)
		f.mu.Unlock()
	}
	return seq, sent, err
}

// MaxSeq is the largest sequence number written to object j.
func (f *Fixture) MaxSeq(j int) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxSeq[j]
}

func (f *Fixture) deployment(j int) *unstructured.Unstructured {
	labels := map[string]any{labelApp: "load"}
	if f.IsMulti(j) {
		labels[labelMulti] = "true"
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"replicas": int64(3),
			"selector": map[string]any{"matchLabels": map[string]any{"load-app": ObjectName(j)}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"load-app": ObjectName(j)}},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "app", "image": "registry.example/app:1",
				}}},
			},
		},
	}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	u.SetNamespace(ObjectNamespace)
	u.SetName(ObjectName(j))
	u.SetLabels(map[string]string{labelApp: "load"})
	if f.IsMulti(j) {
		u.SetLabels(map[string]string{labelApp: "load", labelMulti: "true"})
	}
	return u
}

func bindingPolicy() *unstructured.Unstructured {
	var names []any
	for _, c := range Collectors() {
		names = append(names, c.GetName())
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"clusterSelectors": []any{map[string]any{"matchLabels": map[string]any{"load": "true"}}},
		"downsync": []any{
			map[string]any{
				"objectSelectors":  []any{map[string]any{"matchLabels": map[string]any{labelApp: "load"}}},
				"statusCollectors": names,
			},
			map[string]any{
				"objectSelectors":           []any{map[string]any{"matchLabels": map[string]any{labelMulti: "true"}}},
				"wantMultiWECReportedState": true,
			},
		},
	}}}
	u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind("BindingPolicy"))
	u.SetName(BindingPolicy)
	return u
}
