package aggregator

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestTrimmingListerTrimsEachPage: the ITS informers' lists come back with every item already
// transformed (status decoded, raw JSON and managed fields dropped), and the reflector's
// resourceVersion "0" (one unpaged response from the watch cache) is asked for as a paged
// consistent list.
func TestTrimmingListerTrimsEachPage(t *testing.T) {
	var asked []metav1.ListOptions
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			asked = append(asked, opts)
			return &controlv1alpha1.WorkStatusList{Items: []controlv1alpha1.WorkStatus{
				*wireWorkStatus(t, "wec-0001", "app-0001", 1, deploymentStatus(1)),
				*wireWorkStatus(t, "wec-0002", "app-0001", 2, deploymentStatus(2)),
			}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			asked = append(asked, opts)
			return watch.NewEmptyWatch(), nil
		},
	}
	l := trimmingLister{lw}
	for _, tc := range []struct {
		opts, want metav1.ListOptions
	}{
		{metav1.ListOptions{ResourceVersion: "0", Limit: 500}, metav1.ListOptions{Limit: 500}},
		{metav1.ListOptions{ResourceVersion: "0"}, metav1.ListOptions{ResourceVersion: "0"}}, // unpaged: as asked
		{metav1.ListOptions{ResourceVersion: "42", Limit: 500}, metav1.ListOptions{ResourceVersion: "42", Limit: 500}},
		{metav1.ListOptions{Continue: "c", Limit: 500}, metav1.ListOptions{Continue: "c", Limit: 500}},
	} {
		asked = nil
		out, err := l.ListWithContext(context.Background(), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(asked) != 1 || asked[0] != tc.want {
			t.Errorf("list %+v asked the apiserver %+v, want %+v", tc.opts, asked, tc.want)
		}
		for i, ws := range out.(*controlv1alpha1.WorkStatusList).Items {
			if !transformed(&ws) || ws.Status.Raw != nil || ws.ManagedFields != nil {
				t.Errorf("item %d not trimmed: transformed %v, raw %d bytes, %d managed fields", i, transformed(&ws), len(ws.Status.Raw), len(ws.ManagedFields))
			}
		}
	}
	asked = nil
	if _, err := l.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "7"}); err != nil || len(asked) != 1 || asked[0].ResourceVersion != "7" {
		t.Errorf("watch: err %v, asked %+v", err, asked)
	}
}
