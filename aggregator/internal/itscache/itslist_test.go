package itscache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"testing/iotest"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"

	"github.com/statusfold/statusfold/aggregator/internal/testutil"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/compactjson"
)

// TestTrimmingListerTrimsEachPage: lists other than WorkStatus lists (which stream) come back
// with every item already transformed (status decoded, raw JSON and managed fields dropped), and
// the reflector's resourceVersion "0" (one unpaged response from the watch cache) is asked for as
// a paged consistent list.
func TestTrimmingListerTrimsEachPage(t *testing.T) {
	var asked []metav1.ListOptions
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			asked = append(asked, opts)
			return &controlv1alpha1.WorkStatusList{Items: []controlv1alpha1.WorkStatus{
				*testutil.WireWorkStatus(t, "wec-0001", "app-0001", 1, testutil.DeploymentStatus(1)),
				*testutil.WireWorkStatus(t, "wec-0002", "app-0001", 2, testutil.DeploymentStatus(2)),
			}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			asked = append(asked, opts)
			return watch.NewEmptyWatch(), nil
		},
	}
	l := trimmingLister{lw: lw}
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
			if !Transformed(&ws) || ws.Status.Raw != nil || ws.ManagedFields != nil {
				t.Errorf("item %d not trimmed: transformed %v, raw %d bytes, %d managed fields", i, Transformed(&ws), len(ws.Status.Raw), len(ws.ManagedFields))
			}
		}
	}
	asked = nil
	if _, err := l.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "7"}); err != nil || len(asked) != 1 || asked[0].ResourceVersion != "7" {
		t.Errorf("watch: err %v, asked %+v", err, asked)
	}
}

// workStatusListJSON is a WorkStatusList's JSON as the apiserver sends it: n WorkStatuses (each
// with a Deployment's status and a managed-fields entry) and list metadata.
func workStatusListJSON(t testing.TB, n int, rv, cont string) []byte {
	list := controlv1alpha1.WorkStatusList{TypeMeta: metav1.TypeMeta{APIVersion: "control.kubestellar.io/v1alpha1", Kind: "WorkStatusList"}}
	list.ResourceVersion, list.Continue = rv, cont
	for i := range n {
		list.Items = append(list.Items, *testutil.WireWorkStatus(t, fmt.Sprintf("wec-%04d", i%1000), fmt.Sprintf("app-%04d", i/1000), i, testutil.DeploymentStatus(i)))
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWorkStatusListerStreams: a WorkStatus list is asked for as the reflector asks (its
// resourceVersion, limit, continue token and selector go to the apiserver unchanged), decoded
// item by item into the same objects as client-go's decoder makes, each item trimmed; the list's
// resourceVersion and continue token come back for the pager; apiserver errors keep their
// status (a 410 is still "expired", which the reflector acts on); a truncated or malformed body
// fails the list instead of returning part of it.
func TestWorkStatusListerStreams(t *testing.T) {
	body := workStatusListJSON(t, 3, "4711", "next-page")
	var want controlv1alpha1.WorkStatusList
	if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &want); err != nil {
		t.Fatal(err)
	}
	var reply func(w http.ResponseWriter)
	var asked url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/control.kubestellar.io/v1alpha1/workstatuses" {
			http.Error(w, "wrong path "+r.URL.Path, http.StatusNotFound)
			return
		}
		asked = r.URL.Query()
		reply(w)
	}))
	defer srv.Close()
	l := streamingLister(t, srv.URL)
	opts := metav1.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: "a=b"}

	reply = func(w http.ResponseWriter) { w.Header().Set("Content-Type", "application/json"); _, _ = w.Write(body) }
	out, err := l.ListWithContext(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if asked.Get("resourceVersion") != "0" || asked.Get("limit") != "500" || asked.Get("labelSelector") != "a=b" {
		t.Errorf("asked the apiserver %v", asked)
	}
	checkStreamedList(t, out, &want)

	reply = func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old"}`))
	}
	if _, err := l.ListWithContext(context.Background(), opts); !apierrors.IsResourceExpired(err) {
		t.Errorf("410 Expired: got %v", err)
	}
	for name, b := range map[string][]byte{
		"truncated":     body[:len(body)/2],
		"not an object": []byte(`[1,2]`),
		"bad item":      []byte(`{"metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":7}}]}`),
		"items no list": []byte(`{"items":{}}`),
	} {
		reply = func(w http.ResponseWriter) { w.Header().Set("Content-Type", "application/json"); _, _ = w.Write(b) }
		if out, err := l.ListWithContext(context.Background(), opts); err == nil {
			t.Errorf("%s: no error, got %+v", name, out)
		}
	}
	reply = func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"WorkStatusList","metadata":{"resourceVersion":"9"},"items":null,"extra":{"x":[1]}}`))
	}
	if out, err := l.ListWithContext(context.Background(), opts); err != nil || out.(*workStatusPtrList).ResourceVersion != "9" {
		t.Errorf("empty list: %v, %+v", err, out)
	}
}

// checkStreamedList checks a streamed WorkStatus list as the reflector reads it, against want,
// the same list decoded by client-go's decoder: the items are taken as they are, the list
// metadata is there, and every item is the same as want's, trimmed.
func checkStreamedList(t *testing.T, out runtime.Object, want *controlv1alpha1.WorkStatusList) {
	t.Helper()
	ptrs := out.(*workStatusPtrList)
	// The reflector takes the items as they are (one allocation each, made while decoding),
	// without copying each out of an array.
	objs, err := meta.ExtractListWithAlloc(out)
	if err != nil || len(objs) != len(ptrs.Items) {
		t.Fatalf("the reflector's extraction: %d objects, %v", len(objs), err)
	}
	for i := range objs {
		if objs[i] != runtime.Object(ptrs.Items[i]) {
			t.Errorf("item %d: the reflector got a copy, want the decoded item itself", i)
		}
	}
	if lm, err := meta.ListAccessor(out); err != nil || lm.GetResourceVersion() != "4711" || lm.GetContinue() != "next-page" {
		t.Errorf("list metadata as the reflector reads it: %v, %v", lm, err)
	}
	if cp := out.DeepCopyObject().(*workStatusPtrList); !equality.Semantic.DeepEqual(valueList(cp), valueList(ptrs)) || cp.Items[0] == ptrs.Items[0] {
		t.Errorf("DeepCopyObject: %+v, want an equal list of other items", cp)
	}
	got := valueList(ptrs)
	if got.ResourceVersion != "4711" || got.Continue != "next-page" || len(got.Items) != 3 {
		t.Fatalf("list metadata %+v with %d items, want resourceVersion 4711, continue next-page, 3 items", got.ListMeta, len(got.Items))
	}
	for i := range want.Items {
		w, g := &want.Items[i], &got.Items[i]
		if !Transformed(g) || g.ManagedFields != nil {
			t.Errorf("item %d not trimmed", i)
		}
		if _, err := TrimITSObject(w); err != nil {
			t.Fatal(err)
		}
		ws, werr := WorkStatusStatus(w)
		gs, gerr := WorkStatusStatus(g)
		if werr != nil || gerr != nil {
			t.Fatalf("item %d status: %v, %v", i, werr, gerr)
		}
		if !equality.Semantic.DeepEqual(w.ObjectMeta, g.ObjectMeta) || w.Spec != g.Spec || w.TypeMeta != g.TypeMeta ||
			!equality.Semantic.DeepEqual(w.StatusDetails, g.StatusDetails) || !equality.Semantic.DeepEqual(compactjson.Expand(ws), compactjson.Expand(gs)) || ws == nil {
			t.Errorf("item %d decoded as\n%+v\nwant (client-go's decoder, then trimmed)\n%+v", i, g, w)
		}
	}
}

// BenchmarkWorkStatusListDecode: decoding a 2,000-item WorkStatus list whole (the body read,
// then client-go's JSON decoding, then the transform per item) against decodeWorkStatusList
// (item by item, each trimmed at once); B/op counts every allocation, the peak is what the
// item-by-item form lowers.
func BenchmarkWorkStatusListDecode(b *testing.B) {
	body := workStatusListJSON(b, 2000, "1", "")
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			buf, _ := io.ReadAll(bytes.NewReader(body))
			var list controlv1alpha1.WorkStatusList
			if err := kjson.UnmarshalCaseSensitivePreserveInts(buf, &list); err != nil {
				b.Fatal(err)
			}
			for i := range list.Items {
				_, _ = TrimITSObject(&list.Items[i])
			}
		}
	})
	b.Run("streamed", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var list workStatusPtrList
			if err := decodeWorkStatusList(bytes.NewReader(body), &list, func(ws *controlv1alpha1.WorkStatus) { _, _ = TrimITSObject(ws) }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodeWorkStatusListMatchesWholeDecode: item by item, from a body read one byte at a time
// (every value split across reads) and indented, with strings holding brackets, escaped quotes
// and backslashes, the list decodes to what client-go's whole-list decoding gives.
func TestDecodeWorkStatusListMatchesWholeDecode(t *testing.T) {
	odd := testutil.DeploymentStatus(7)
	odd["message"] = `a "quoted" }]{[ \ back\\slash, "` + "\u00e9\n"
	odd["nums"] = []any{1, -2.5e3, true, false, nil, "x"}
	items := []*controlv1alpha1.WorkStatus{
		testutil.WireWorkStatus(t, "wec-0001", "app-0001", 1, testutil.DeploymentStatus(1)),
		testutil.WireWorkStatus(t, "wec-0002", "app-0001", 2, odd),
		testutil.WireWorkStatus(t, "wec-0003", "app-0001", 3, nil),
	}
	list := controlv1alpha1.WorkStatusList{ListMeta: metav1.ListMeta{ResourceVersion: "12", RemainingItemCount: new(int64(3))}}
	for _, ws := range items {
		list.Items = append(list.Items, *ws)
	}
	for _, indent := range []string{"", "  "} {
		body, err := json.MarshalIndent(list, " \n", indent)
		if err != nil {
			t.Fatal(err)
		}
		var want controlv1alpha1.WorkStatusList
		var got workStatusPtrList
		if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &want); err != nil {
			t.Fatal(err)
		}
		n := 0
		if err := decodeWorkStatusList(iotest.OneByteReader(bytes.NewReader(body)), &got, func(*controlv1alpha1.WorkStatus) { n++ }); err != nil {
			t.Fatalf("indent %q: %v", indent, err)
		}
		if n != len(items) || !equality.Semantic.DeepEqual(want, valueList(&got)) {
			t.Errorf("indent %q: %d items passed; decoded\n%+v\nwant\n%+v", indent, n, got, want)
		}
	}
}

// FuzzDecodeWorkStatusList: whatever the body, decoding item by item never panics, and a body
// that client-go's whole-list decoding accepts decodes to the same list. (Not the converse: an
// unknown top-level field is skipped unread, see decodeWorkStatusList.)
func FuzzDecodeWorkStatusList(f *testing.F) {
	f.Add(workStatusListJSON(f, 2, "5", "c"))
	f.Add([]byte(`{"items":null}`))
	f.Add([]byte(`{"items":[],"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"1"}}`))
	f.Add([]byte(`{"kind":"WorkStatusList","x":"\"]}","items":[{"status":{"a":"}]\\\\"}}]}`))
	f.Add([]byte(` { "items" : [ { } , { "status" : 1 } ] } `))
	f.Fuzz(func(t *testing.T, body []byte) {
		var got workStatusPtrList
		err := decodeWorkStatusList(iotest.HalfReader(bytes.NewReader(body)), &got, func(*controlv1alpha1.WorkStatus) {})
		var want controlv1alpha1.WorkStatusList
		if kjson.UnmarshalCaseSensitivePreserveInts(body, &want) != nil || !bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{")) {
			return
		}
		if err != nil {
			t.Fatalf("client-go decodes %q; item by item: %v", body, err)
		}
		if !equality.Semantic.DeepEqual(want, valueList(&got)) {
			t.Fatalf("%q decoded as\n%+v\nwant\n%+v", body, got, want)
		}
	})
}

// streamingLister is the ITS informers' lister for WorkStatuses, listing from the apiserver at
// host.
func streamingLister(t *testing.T, host string) trimmingLister {
	t.Helper()
	wsl, err := newWorkStatusLister(&rest.Config{Host: host}, testScheme(t), Transform{})
	if err != nil {
		t.Fatal(err)
	}
	return trimmingLister{stream: wsl.list}
}

// testScheme is a scheme with statusfold's control API.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := controlv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// valueList is l as a WorkStatusList (items copied into its array), to compare with client-go's
// decoding.
func valueList(l *workStatusPtrList) controlv1alpha1.WorkStatusList {
	out := controlv1alpha1.WorkStatusList{TypeMeta: l.TypeMeta, ListMeta: l.ListMeta}
	if l.Items != nil {
		out.Items = make([]controlv1alpha1.WorkStatus, 0, len(l.Items))
		for _, ws := range l.Items {
			out.Items = append(out.Items, *ws)
		}
	}
	return out
}

// TestWorkStatusListerPagedThroughClientGoPager: a list the apiserver answers in pages (a relist
// without resourceVersion "0") goes through client-go's pager as the reflector's does, and every
// page's items reach the reflector transformed and as decoded, not copied.
func TestWorkStatusListerPagedThroughClientGoPager(t *testing.T) {
	page1 := workStatusListJSON(t, 2, "100", "next")
	page2 := workStatusListJSON(t, 3, "100", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("continue") == "next" {
			_, _ = w.Write(page2)
			return
		}
		_, _ = w.Write(page1)
	}))
	defer srv.Close()
	l := streamingLister(t, srv.URL)
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return l.ListWithContext(context.Background(), opts)
	}))
	out, _, err := p.ListWithAlloc(context.Background(), metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := meta.ExtractListWithAlloc(out)
	if err != nil || len(objs) != 5 {
		t.Fatalf("%d objects from two pages (2 + 3), err %v", len(objs), err)
	}
	for i, o := range objs {
		ws, ok := o.(*controlv1alpha1.WorkStatus)
		if !ok || !Transformed(ws) {
			t.Errorf("item %d: %T, transformed %v", i, o, ok && Transformed(ws))
		}
	}
	if lm, err := meta.ListAccessor(out); err != nil || lm.GetResourceVersion() != "100" {
		t.Errorf("the paged list's resourceVersion: %v, %v", lm, err)
	}
}

// TestWorkStatusInformerHasNoNamespaceIndex: the ITS cache's WorkStatus informer keeps the
// indexes it is given but the namespace index (nothing lists WorkStatuses by namespace from it);
// other kinds' informers keep every index.
func TestWorkStatusInformerHasNoNamespaceIndex(t *testing.T) {
	newInformer, err := ITSInformers(&rest.Config{Host: "http://127.0.0.1:1"}, testScheme(t), Transform{})
	if err != nil {
		t.Fatal(err)
	}
	given := toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		"other": func(any) ([]string, error) { return nil, nil }}
	lw := &toolscache.ListWatch{}
	ws := newInformer(lw, &controlv1alpha1.WorkStatus{}, 0, given).GetIndexer().GetIndexers()
	if _, ok := ws[toolscache.NamespaceIndex]; ok {
		t.Error("the WorkStatus informer has the namespace index")
	}
	if _, ok := ws["other"]; !ok {
		t.Error("the WorkStatus informer lost another index")
	}
	if _, ok := given[toolscache.NamespaceIndex]; !ok {
		t.Error("the indexers given were modified")
	}
	mc := newInformer(lw, &controlv1alpha1.Binding{}, 0, given).GetIndexer().GetIndexers()
	if len(mc) != 2 {
		t.Errorf("another kind's informer has indexes %v, want both given", slices.Collect(maps.Keys(mc)))
	}
}
