package load

import "testing"

func TestRequestDiff(t *testing.T) {
	before := []byte(`# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",group="control.kubestellar.io",resource="workstatuses",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 10
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="WATCH",version="v1"} 1
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="control.kubestellar.io",resource="workstatuses",scope="resource",subresource="status",verb="PATCH",version="v1alpha1",le="+Inf"} 10
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="control.kubestellar.io",resource="workstatuses",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 0.5
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="control.kubestellar.io",resource="workstatuses",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 10
`)
	after := []byte(`# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",group="control.kubestellar.io",resource="workstatuses",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 30
apiserver_request_total{code="409",component="apiserver",group="control.kubestellar.io",resource="workstatuses",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 2
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="resource",subresource="",verb="WATCH",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",group="control.kubestellar.io",resource="bindings",scope="cluster",subresource="",verb="APPLY",version="v1alpha1"} 1
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="control.kubestellar.io",resource="workstatuses",scope="resource",subresource="status",verb="PATCH",version="v1alpha1",le="+Inf"} 32
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="control.kubestellar.io",resource="workstatuses",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 1.5
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="control.kubestellar.io",resource="workstatuses",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 32
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="control.kubestellar.io",resource="bindings",scope="cluster",subresource="",verb="APPLY",version="v1alpha1",le="+Inf"} 1
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="control.kubestellar.io",resource="bindings",scope="cluster",subresource="",verb="APPLY",version="v1alpha1"} 2.25
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="control.kubestellar.io",resource="bindings",scope="cluster",subresource="",verb="APPLY",version="v1alpha1"} 1
# TYPE apiserver_storage_consistency_checks_total counter
apiserver_storage_consistency_checks_total{group="control.kubestellar.io",resource="workstatuses",status="success"} 1
apiserver_storage_consistency_checks_total{group="",resource="pods",status="success"} 0
`)
	b, err := parseRequests(before)
	if err != nil {
		t.Fatal(err)
	}
	a, err := parseRequests(after)
	if err != nil {
		t.Fatal(err)
	}
	got := diffRequests(b, a, 11)
	want := []RequestCount{
		{Verb: "APPLY", Resource: "control.kubestellar.io/bindings", Count: 1, Seconds: 2.25, PerUpdate: 1.0 / 11},
		{Verb: "PATCH", Resource: "control.kubestellar.io/workstatuses/status", Count: 22, Seconds: 1, PerUpdate: 2},
		// the watch cache's consistency check of WorkStatuses that ran meanwhile (none of pods)
		{Verb: "CHECK", Resource: "control.kubestellar.io/workstatuses", Count: 1, PerUpdate: 1.0 / 11},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v (unchanged POST, the WATCH and checks that did not run left out)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := parseRequests([]byte("not{ metrics")); err == nil {
		t.Error("malformed metrics text parsed without an error")
	}
}
