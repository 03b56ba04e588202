package compactjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := utiljson.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return v
}

const deployment = `{"observedGeneration":1,"replicas":3,"updatedReplicas":3,"readyReplicas":2,
	"availableReplicas":2,"marker":123456,"conditions":[
	{"type":"Available","status":"False","reason":"MinimumReplicasUnavailable","message":"Deployment does not have minimum availability.","lastUpdateTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"},
	{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","message":"ReplicaSet \"app-5d8f7c9b4\" has successfully progressed.","lastUpdateTime":"2026-01-02T00:00:00Z","lastTransitionTime":"2026-01-02T00:00:00Z"}]}`

// TestRoundTrip: Expand(Compact(v)) is v, for every kind of JSON value and nesting, and encodes
// to the same JSON (an empty object stays an object, not null).
func TestRoundTrip(t *testing.T) {
	for _, s := range []string{
		`null`, `true`, `"s"`, `1`, `1.5`, `-9007199254740993`, `{}`, `[]`,
		`{"a":{}}`, `{"a":[]}`, `[{}]`, `[[{"a":1}],[1,2]]`, `{"a":null,"b":[null,{"c":[{"d":{}}]}]}`,
		`{"z":1,"a":2,"m":{"y":[1,"x",true,null,2.5],"b":{"c":"d"}}}`, deployment,
	} {
		t.Run(s, func(t *testing.T) {
			v := decode(t, s)
			for _, sets := range []*KeySets{nil, NewKeySets(16)} {
				c := Compact(v, sets)
				got := Expand(c)
				if !reflect.DeepEqual(got, v) {
					t.Fatalf("Expand(Compact(%s)) = %#v, want %#v", s, got, v)
				}
				a, _ := json.Marshal(v)
				b, _ := json.Marshal(got)
				if string(a) != string(b) {
					t.Fatalf("encodes as %s, want %s", b, a)
				}
			}
		})
	}
}

// TestCompactLeavesItsInputAlone: Compact does not modify v (its lists are copied when they hold
// objects), and Expand does not modify the compact value.
func TestCompactLeavesItsInputAlone(t *testing.T) {
	v := decode(t, deployment)
	want := decode(t, deployment)
	c := Compact(v, NewKeySets(16))
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("Compact modified its input: %#v", v)
	}
	o := c.(*Object)
	conds, _ := o.Get("conditions")
	if _, ok := conds.([]any)[0].(*Object); !ok {
		t.Fatalf("the conditions list holds %T, want *Object", conds.([]any)[0])
	}
	e := Expand(c).(map[string]any)
	e["replicas"] = int64(7)
	e["conditions"].([]any)[0].(map[string]any)["type"] = "changed"
	if r, _ := o.Get("replicas"); r != int64(3) {
		t.Fatalf("replicas of the compact value = %v after the expanded copy changed", r)
	}
	if !reflect.DeepEqual(Expand(c), want) {
		t.Fatal("writing into an expanded copy changed the compact value")
	}
}

// TestScalarListsAreShared: what has no object inside is shared, not copied, both ways.
func TestScalarListsAreShared(t *testing.T) {
	v := decode(t, `{"l":[1,2,[3]],"o":[{"a":1}]}`).(map[string]any)
	c := Compact(v, nil).(*Object)
	l, _ := c.Get("l")
	if &l.([]any)[0] != &v["l"].([]any)[0] {
		t.Error("Compact copied a list without objects")
	}
	ol, _ := c.Get("o")
	if &ol.([]any)[0] == &v["o"].([]any)[0] {
		t.Error("Compact shared a list holding objects (it must not write into its input)")
	}
	e := Expand(c).(map[string]any)
	if &e["l"].([]any)[0] != &l.([]any)[0] {
		t.Error("Expand copied a list without objects")
	}
	if top := []any{int64(1), "x"}; &Expand(top).([]any)[0] != &top[0] {
		t.Error("Expand copied a plain list of scalars")
	}
}

func TestGet(t *testing.T) {
	c := Compact(decode(t, `{"b":2,"a":1,"c":{"d":true}}`), nil).(*Object)
	if c.Len() != 3 {
		t.Fatalf("Len = %d, want 3", c.Len())
	}
	for k, want := range map[string]any{"a": int64(1), "b": int64(2)} {
		if got, ok := c.Get(k); !ok || got != want {
			t.Errorf("Get(%q) = %v, %v; want %v", k, got, ok, want)
		}
	}
	if d, ok := c.Get("c"); !ok || !reflect.DeepEqual(Expand(d), map[string]any{"d": true}) {
		t.Errorf("Get(c) = %#v, %v", d, ok)
	}
	if _, ok := c.Get("x"); ok {
		t.Error("Get of a missing key found it")
	}
}

// TestKeySetsShareAndAreBounded: objects of the same keys share one key set; a full KeySets
// starts afresh and the objects made before still read correctly.
func TestKeySetsShareAndAreBounded(t *testing.T) {
	sets := NewKeySets(3)
	a := Compact(decode(t, `{"x":1,"y":2}`), sets).(*Object)
	b := Compact(decode(t, `{"y":3,"x":4}`), sets).(*Object)
	if a.keys != b.keys {
		t.Fatal("two objects with the same keys do not share their key set")
	}
	if n := sets.Len(); n != 1 {
		t.Fatalf("KeySets holds %d sets, want 1", n)
	}
	for i := range 5 {
		Compact(decode(t, fmt.Sprintf(`{"k%d":1}`, i)), sets)
	}
	if n := sets.Len(); n > 3 {
		t.Fatalf("KeySets holds %d sets, want at most 3", n)
	}
	if !reflect.DeepEqual(Expand(a), map[string]any{"x": int64(1), "y": int64(2)}) {
		t.Fatalf("an object made before the KeySets restarted reads %#v", Expand(a))
	}
	c := Compact(decode(t, `{"x":5,"y":6}`), sets).(*Object)
	if c.keys == a.keys {
		t.Fatal("a key set dropped from a full KeySets is still handed out")
	}
}

// TestConcurrentUse: Compact with one KeySets and Expand of shared values from many goroutines
// (run with -race).
func TestConcurrentUse(t *testing.T) {
	sets := NewKeySets(8)
	shared := Compact(decode(t, deployment), sets)
	want := decode(t, deployment)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				v := decode(t, fmt.Sprintf(`{"g%d":%d,"i":{"k%d":1}}`, g, i, i%12))
				if !reflect.DeepEqual(Expand(Compact(v, sets)), v) {
					t.Error("round trip failed")
					return
				}
				if !reflect.DeepEqual(Expand(shared), want) {
					t.Error("shared value reads differently")
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzRoundTrip: whatever JSON decodes, Expand(Compact(v)) is v and v is unchanged.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[{"b":{}}],"c":1.5}`, deployment, `[1,[{"x":null}]]`} {
		f.Add([]byte(s))
	}
	sets := NewKeySets(64)
	f.Fuzz(func(t *testing.T, data []byte) {
		var v, again any
		if utiljson.Unmarshal(data, &v) != nil {
			return
		}
		_ = utiljson.Unmarshal(data, &again)
		c := Compact(v, sets)
		if !reflect.DeepEqual(v, again) {
			t.Fatal("Compact modified its input")
		}
		if !reflect.DeepEqual(Expand(c), v) {
			t.Fatalf("Expand(Compact(%s)) differs", data)
		}
	})
}

// BenchmarkBytes reports the live heap of a Deployment-shaped status as decoded Go maps and in
// compact form (key sets shared), per status, over 10,000 statuses of distinct values.
func BenchmarkBytes(b *testing.B) {
	const n = 10000
	raw := make([][]byte, n)
	for i := range raw {
		raw[i] = fmt.Appendf(nil, `{"observedGeneration":1,"replicas":3,"updatedReplicas":3,"readyReplicas":%d,"availableReplicas":%d,"marker":%d,"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability.","lastUpdateTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"},{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable","message":"ReplicaSet has successfully progressed (write %d).","lastUpdateTime":"2026-01-02T00:00:00Z","lastTransitionTime":"2026-01-02T00:00:00Z"}]}`, i%4, i%4, 100000+i, i)
	}
	for _, mode := range []string{"maps", "compact"} {
		b.Run(mode, func(b *testing.B) {
			var per float64
			for b.Loop() {
				sets := NewKeySets(1024)
				held := make([]any, n)
				before := heapLive()
				for i := range held {
					var v any
					if err := utiljson.Unmarshal(raw[i], &v); err != nil {
						b.Fatal(err)
					}
					if mode == "compact" {
						v = Compact(v, sets)
					}
					held[i] = v
				}
				per = float64(heapLive()-before) / n
				runtime.KeepAlive(held)
			}
			b.ReportMetric(per, "B/status")
		})
	}
}

// BenchmarkExpand is the cost of reading a compact Deployment-shaped status as plain values.
func BenchmarkExpand(b *testing.B) {
	c := Compact(decode(b, deployment), NewKeySets(16))
	for b.Loop() {
		_ = Expand(c)
	}
}

func heapLive() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
