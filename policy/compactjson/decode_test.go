package compactjson

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// checkDecodeLikeCompact fails unless Decode(data) is what Compact makes of json.Unmarshal's
// decoding of data: the same encoding and key sets, and, with a KeySets that has room for them
// (one that starts afresh between the two calls shares nothing), the same shared shape.
func checkDecodeLikeCompact(t *testing.T, data []byte, sets *KeySets) {
	t.Helper()
	var v any
	werr := utiljson.Unmarshal(data, &v)
	m, isObject := v.(map[string]any)
	got, err := Decode(data, sets)
	switch {
	case werr != nil || !isObject:
		if err == nil {
			t.Fatalf("Decode(%.300q) = %.300v, want an error (json.Unmarshal: %v, %T)", data, Expand(got), werr, v)
		}
		return
	case err != nil:
		t.Fatalf("Decode(%.300q): %v; json.Unmarshal decodes it", data, err)
	}
	want := Compact(m, sets).(*Object)
	if got.data != want.data || !reflect.DeepEqual(got.ext, want.ext) || sets != nil && sets.max >= 1<<10 && got.ext != want.ext {
		t.Fatalf("Decode(%.300q) encodes as %.300q with key sets %.300v,\nCompact as %.300q with %.300v (shared: %v)",
			data, got.data, setNames(got.ext), want.data, setNames(want.ext), got.ext == want.ext)
	}
	if !reflect.DeepEqual(Expand(got), v) {
		t.Fatalf("Expand(Decode(%.300q)) = %.300v, want %.300v", data, Expand(got), v)
	}
}

func setNames(e *ext) [][]string {
	var n [][]string
	for _, ks := range e.sets {
		n = append(n, ks.names)
	}
	return n
}

// TestDecodeIsCompactOfUnmarshal: for objects of every kind of value — repeated keys, nested
// objects with their parents' keys, escapes, invalid UTF-8, numbers at int64's limits and beyond,
// exponents, white space, lists and key-set lists longer than one varint byte — Decode gives
// byte for byte what Compact gives for json.Unmarshal's result.
func TestDecodeIsCompactOfUnmarshal(t *testing.T) {
	long := `{"l":[` + strings.Repeat(`1,`, 300) + `{"x":[` + strings.Repeat(`"s",`, 130) + `2]}]}`
	var many strings.Builder // 200 distinct key sets, first seen inside out
	many.WriteString(`{"z":[`)
	for i := range 200 {
		fmt.Fprintf(&many, `{"k%d":{"in%d":1}},`, i, i%150)
	}
	many.WriteString(`{}]}`)
	for _, s := range []string{
		`{}`, ` { } `, `{"a":{}}`, `{"a":[]}`, `{"a":null,"b":true,"c":false}`, deployment,
		`{"z":1,"a":2,"m":{"y":[1,"x",true,null,2.5],"b":{"c":"d"}}}`,
		`{"a":1,"b":2,"a":3}`, `{"a":{"x":1},"a":[2]}`, `{"a":{"a":{"a":1}}}`, `{"b":{"a":1},"a":{"b":2},"c":{"a":3}}`,
		`{"s":"q\"uo\\te\/\u00e9\ud83d\ude00\n\t"}`, `{"esc\"key":1,"key":2}`, "{\"bad\":\"\xff\xfe\",\"half\":\"\\ud800\"}", `{"é":"ü"}`,
		`{"n":[0,-0,1,-1,9223372036854775807,-9223372036854775808,9223372036854775808,-9223372036854775809]}`,
		`{"n":[123456789012345678,1234567890123456789,1.5,-2.5e3,1e2,1E-2,0.0,1e308,-0.0,12345678901234567890123]}`,
		" \n{\t\"a\" :\r[ 1 , { \"b\" : 2 } ] ,\"c\":\"d\" }\n ",
		long, many.String(),
	} {
		for _, sets := range []*KeySets{nil, NewKeySets(1024), NewKeySets(4)} {
			checkDecodeLikeCompact(t, []byte(s), sets)
		}
	}
}

// TestDecodeRejects: what json.Unmarshal rejects, and anything but one object, Decode rejects
// (checkDecodeLikeCompact checks json.Unmarshal agrees on each).
func TestDecodeRejects(t *testing.T) {
	for _, s := range []string{
		``, ` `, `[]`, `"s"`, `1`, `null`, `{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{a:1}`,
		`{"a":1}x`, `{"a":1}{}`, `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":[`, `{"a":tru}`, `{"a":nul}`, `{"a":True}`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":+1}`, `{"a":1e}`, `{"a":1e+}`, `{"a":1e400}`, `{"a":--1}`,
		"{\"a\":\"x\ny\"}", `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"abc}`, `{"a":"\"}`, `{"a\":1}`, `{"a":[}`, `{"a":{]}`,
		strings.Repeat(`{"a":`, maxDepth+1) + `1` + strings.Repeat(`}`, maxDepth+1),
		`{"a":` + strings.Repeat(`[`, maxDepth) + strings.Repeat(`]`, maxDepth) + `}`,
	} {
		if _, err := Decode([]byte(s), nil); err == nil {
			t.Errorf("Decode(%.40q): no error", s)
		}
		checkDecodeLikeCompact(t, []byte(s), nil)
	}
	// Nesting up to the limit is accepted.
	deep := strings.Repeat(`{"a":`, maxDepth-1) + `[1]` + strings.Repeat(`}`, maxDepth-1)
	checkDecodeLikeCompact(t, []byte(deep), NewKeySets(16))
}

// TestDecodeKeepsNoPartOfItsInput: the object and its key sets hold copies, so the input buffer
// can be reused (the informers' decoding reuses theirs).
func TestDecodeKeepsNoPartOfItsInput(t *testing.T) {
	in := []byte(`{"key":"value","o":{"inner":[1,"x"]}}`)
	o, err := Decode(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'X'
	}
	if want := decode(t, `{"key":"value","o":{"inner":[1,"x"]}}`); !reflect.DeepEqual(Expand(o), want) {
		t.Errorf("after its input changed, the decoded object reads %#v", Expand(o))
	}
}

// FuzzDecode: for any input, Decode fails exactly when json.Unmarshal fails or decodes no object,
// and otherwise gives Compact's encoding of json.Unmarshal's value.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[{"b":{}}],"c":1.5,"a":-0}`, deployment, `{"s":"\u00e9\"","n":1e5}`, `[1]`, `{"a":01}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeLikeCompact(t, data, NewKeySets(1<<12))
		checkDecodeLikeCompact(t, data, nil)
	})
}

// BenchmarkDecode: a Deployment-shaped status from its JSON, decoded directly against decoded to
// maps by json.Unmarshal and then compacted (what the ITS cache's transform did before).
func BenchmarkDecode(b *testing.B) {
	data := []byte(deployment)
	sets := NewKeySets(16)
	b.Run("unmarshal+compact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := utiljson.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
			_ = Compact(v, sets)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(data, sets); err != nil {
				b.Fatal(err)
			}
		}
	})
}
