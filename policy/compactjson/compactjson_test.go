package compactjson

import (
	"encoding/json"
	"fmt"
	"math"
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

// TestCompactHoldsNoPartOfItsInput: a compact object is a copy (its input can change after), and
// a top-level list of scalars is shared, not copied, both ways.
func TestCompactHoldsNoPartOfItsInput(t *testing.T) {
	v := decode(t, `{"l":[1,2,[3]],"o":[{"a":"x"}]}`).(map[string]any)
	c := Compact(v, nil).(*Object)
	v["l"].([]any)[0] = int64(9)
	v["o"].([]any)[0].(map[string]any)["a"] = "y"
	if want := decode(t, `{"l":[1,2,[3]],"o":[{"a":"x"}]}`); !reflect.DeepEqual(Expand(c), want) {
		t.Errorf("after its input changed, the compact object reads %#v", Expand(c))
	}
	if top := []any{int64(1), "x"}; &Compact(top, nil).([]any)[0] != &top[0] || &Expand(top).([]any)[0] != &top[0] {
		t.Error("a plain list of scalars was copied")
	}
}

// TestValuesKeptAsTheyAre: values that are not plain decoded JSON (other number types, nil maps
// and lists) come back as they went in, the same type and value.
func TestValuesKeptAsTheyAre(t *testing.T) {
	v := map[string]any{"i": 7, "u": uint64(1 << 63), "n": json.Number("1.0"), "nl": []any(nil),
		"nm": map[string]any(nil), "l": []any{int32(-1), map[string]any{"f": float32(0.5)}}}
	for _, sets := range []*KeySets{nil, NewKeySets(16)} {
		if got := Expand(Compact(v, sets)); !reflect.DeepEqual(got, v) {
			t.Errorf("Expand(Compact(v)) = %#v, want %#v", got, v)
		}
	}
}

// TestNumbersExact: int64 and float64 values come back bit for bit, at their limits too.
func TestNumbersExact(t *testing.T) {
	v := map[string]any{"min": int64(math.MinInt64), "max": int64(math.MaxInt64), "neg": int64(-1), "zero": int64(0),
		"negzero": math.Copysign(0, -1), "nan": math.NaN(), "inf": math.Inf(-1), "tiny": math.SmallestNonzeroFloat64}
	got := Expand(Compact(v, nil)).(map[string]any)
	for k, want := range v {
		switch w := want.(type) {
		case int64:
			if got[k] != w {
				t.Errorf("%s = %#v, want %#v", k, got[k], w)
			}
		case float64:
			if g, ok := got[k].(float64); !ok || math.Float64bits(g) != math.Float64bits(w) {
				t.Errorf("%s = %#v, want %#v", k, got[k], w)
			}
		}
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
	// A nested object's view reads like a compact object of its own.
	n := Compact(decode(t, `{"l":[{"y":{"z":[1,{"w":"v"}]}}],"m":"s"}`), nil).(*Object)
	l, _ := n.Get("l")
	y, _ := l.([]any)[0].(*Object).Get("y")
	if yo, ok := y.(*Object); !ok || yo.Len() != 1 || !reflect.DeepEqual(Expand(yo), decode(t, `{"z":[1,{"w":"v"}]}`)) {
		t.Errorf("Get of a nested object = %#v", y)
	}
	if m, _ := n.Get("m"); m != "s" {
		t.Errorf("Get(m) after a nested list = %#v", m)
	}
}

// TestManyKeySets: a value whose objects have more key sets than the encoder searches linearly
// reads back, nested and repeated.
func TestManyKeySets(t *testing.T) {
	v := map[string]any{}
	for i := range 3 * manySets {
		v[fmt.Sprintf("o%02d", i)] = []any{map[string]any{fmt.Sprintf("k%d", i%(2*manySets)): int64(i)}, map[string]any{"same": true}}
	}
	for _, sets := range []*KeySets{nil, NewKeySets(8), NewKeySets(1024)} {
		c := Compact(v, sets).(*Object)
		if got := Expand(c); !reflect.DeepEqual(got, v) {
			t.Fatalf("Expand(Compact(v)) = %#v, want %#v", got, v)
		}
		if n := len(c.ext.sets); sets != nil && sets.max > 100 && n != 2*manySets+2 {
			t.Errorf("the value refers to %d key sets, want %d (each distinct one once)", n, 2*manySets+2)
		}
	}
}

// TestKeySetsShareAndAreBounded: objects of the same keys share one key set; a full KeySets
// starts afresh and the objects made before still read correctly.
func TestKeySetsShareAndAreBounded(t *testing.T) {
	sets := NewKeySets(3)
	a := Compact(decode(t, `{"x":1,"y":2}`), sets).(*Object)
	b := Compact(decode(t, `{"y":3,"x":4}`), sets).(*Object)
	if a.ext != b.ext || a.ext.sets[0] != b.ext.sets[0] {
		t.Fatal("two objects with the same keys do not share their key set and shape")
	}
	if n := sets.Len(); n != 2 {
		t.Fatalf("KeySets holds %d entries, want 2 (a key set and a shape)", n)
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
	if c.ext == a.ext || c.ext.sets[0] == a.ext.sets[0] {
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
