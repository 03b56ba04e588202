package load

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	restwatch "k8s.io/client-go/rest/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/policy/collector"
)

// funcName is the name a profile gives fn's frames. The table below takes its frame names from
// the functions themselves, so that a renamed or moved function breaks the build, not the test's
// meaning.
func funcName(fn any) string {
	return runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
}

func TestHeapOwner(t *testing.T) {
	tests := []struct {
		name   string
		frames []string // leaf first
		want   string
	}{
		{"watch event decoded for an informer", []string{funcName(json.Unmarshal), funcName((*restwatch.Decoder).Decode), funcName((*watch.StreamWatcher).Stop)}, "informers"},
		{"list paged by the reflector", []string{funcName(json.Unmarshal), funcName((*pager.ListPager).List), funcName((*cache.Reflector).ListAndWatch)}, "informers"},
		{"controller-runtime's cache", []string{funcName(json.Unmarshal), funcName(crcache.New)}, "informers"},
		{"statusfold table built from a cache read", []string{funcName(json.Unmarshal), funcName(collector.Evaluate), funcName(crcache.New)}, "statusfold"},
		{"statusfold code called by the informer", []string{funcName(aggregator.WorkStatusObject), funcName((*cache.Reflector).ListAndWatch)}, "statusfold"},
		{"neither", []string{funcName(json.Unmarshal), funcName(runtime.GC)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := heapOwner(tt.frames); got != tt.want {
				t.Errorf("heapOwner(%v) = %q, want %q", tt.frames, got, tt.want)
			}
		})
	}
}

// copyingDecoder is statusfold code that an informer's goroutine calls: it keeps a copy of each
// decoded ConfigMap's data and drops the original, as a cache transform may. (DeepCopy would not
// do: it shares the strings, which stay the decoder's allocations.)
type copyingDecoder struct{ watch.Decoder }

func (d copyingDecoder) Decode() (watch.EventType, k8sruntime.Object, error) {
	typ, obj, err := d.Decoder.Decode()
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		data := make(map[string]string, len(cm.Data))
		for k, v := range cm.Data {
			data[k] = strings.Clone(v)
		}
		obj = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace}, Data: data}
	}
	return typ, obj, err
}

// TestSplitHeapOfARealProfile writes a heap profile of this process after client-go's watch
// machinery has decoded a stream of ConfigMaps (kept: informer bytes) and another stream through
// copyingDecoder (copies kept: statusfold bytes), and checks that SplitHeap attributes each to its
// owner: the frames are those the Go runtime records, not names written by hand.
func TestSplitHeapOfARealProfile(t *testing.T) {
	const (
		n             = 100
		informerBytes = 20 << 10 // per ConfigMap
		copiedBytes   = 10 << 10
	)
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1

	kept := watchConfigMaps(t, n, informerBytes, func(d watch.Decoder) watch.Decoder { return d })
	copied := watchConfigMaps(t, n, copiedBytes, func(d watch.Decoder) watch.Decoder { return copyingDecoder{d} })

	runtime.GC() // the heap profile shows the heap as of the last completed GC
	runtime.GC()
	path := filepath.Join(t.TempDir(), "heap.pprof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(kept)
	runtime.KeepAlive(copied)

	hs, err := SplitHeap(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("split: %+v", hs)
	// Each side holds its data strings and little else: at least n × size, at most twice that.
	if min := int64(n * informerBytes); hs.Informers < min || hs.Informers > 2*min {
		t.Errorf("informer bytes %d, want between %d and %d (the ConfigMaps the watch decoded)", hs.Informers, min, 2*min)
	}
	if min := int64(n * copiedBytes); hs.Statusfold < min || hs.Statusfold > 2*min {
		t.Errorf("statusfold bytes %d, want between %d and %d (the copies made under the watch)", hs.Statusfold, min, 2*min)
	}
	if hs.Total < hs.Informers+hs.Statusfold {
		t.Errorf("total %d below informers %d + statusfold %d", hs.Total, hs.Informers, hs.Statusfold)
	}
}

// watchConfigMaps decodes n ConfigMap ADDED events of size bytes each through a StreamWatcher
// (its decoder wrapped by wrap), as an informer's watch does, and returns the objects it
// delivered.
func watchConfigMaps(t *testing.T, n, size int, wrap func(watch.Decoder) watch.Decoder) []k8sruntime.Object {
	t.Helper()
	codecs := serializer.NewCodecFactory(clientgoscheme.Scheme)
	info, ok := k8sruntime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), k8sruntime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	var stream bytes.Buffer
	for i := range n {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "demo"},
			Data:       map[string]string{"d": strings.Repeat(string(rune('a'+i%26)), size)}}
		raw, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := json.Marshal(metav1.WatchEvent{Type: string(watch.Added), Object: k8sruntime.RawExtension{Raw: raw}})
		if err != nil {
			t.Fatal(err)
		}
		stream.Write(ev)
		stream.WriteByte('\n')
	}
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(&stream))
	dec := wrap(restwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), codecs.UniversalDeserializer()))
	w := watch.NewStreamWatcher(dec, nil)
	var objs []k8sruntime.Object
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %v", ev.Object)
		}
		objs = append(objs, ev.Object)
	}
	if len(objs) != n {
		t.Fatalf("%d objects decoded, want %d", len(objs), n)
	}
	return objs
}
