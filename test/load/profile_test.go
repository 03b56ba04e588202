package load

import "testing"

func TestHeapOwner(t *testing.T) {
	tests := []struct {
		name   string
		frames []string // leaf first
		want   string
	}{
		{"watch event decoded for an informer", []string{"encoding/json.(*decodeState).object", "k8s.io/apimachinery/pkg/runtime/serializer/json.(*Serializer).Decode", "k8s.io/client-go/rest/watch.(*Decoder).Decode", "k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive"}, "informers"},
		{"list decoded by the reflector", []string{"encoding/json.Unmarshal", "k8s.io/client-go/tools/pager.(*ListPager).List", "k8s.io/client-go/tools/cache.(*Reflector).list"}, "informers"},
		{"statusfold table built from a cache read", []string{"github.com/google/cel-go/common/types.NewDynamicMap", "github.com/statusfold/statusfold/policy/collector.newActivation", "sigs.k8s.io/controller-runtime/pkg/cache.(*informerCache).List"}, "statusfold"},
		{"statusfold transform called by the informer", []string{"github.com/statusfold/statusfold/aggregator.stripManagedFields", "k8s.io/client-go/tools/cache.(*Reflector).watch"}, "statusfold"},
		{"neither", []string{"runtime.malg", "runtime.newproc1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := heapOwner(tt.frames); got != tt.want {
				t.Errorf("heapOwner = %q, want %q", got, tt.want)
			}
		})
	}
}
