package itscache

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestLongKey pins where a key of a reported status becomes too long: over 1,022 characters as
// statusfold writes it in an apply body (applykey.Length), whatever escapes the WEC wrote it with.
// A long string value is no key. For every case that is JSON, the verdict is also the YAML reading
// of apply bodies (as the apiserver reads them) on the body statusfold writes for the status.
func TestLongKey(t *testing.T) {
	key := func(s string) string { return `{"status":{"nested":{"` + s + `":1}}}` }
	rep := strings.Repeat
	cases := []struct {
		name string
		raw  string
		want int
	}{
		{"1,022 characters", key(rep("k", 1022)), 0},
		{"1,023 characters", key(rep("k", 1023)), 1023},
		{"100,000 characters", key(rep("k", 100000)), 100000},
		{"1,023 two-byte characters", key(rep("é", 1023)), 1023},
		{"a long value is no key", `{"a":"` + rep("v", 5000) + `"}`, 0},
		{"escaped quotes inside a long value", `{"a":"` + rep(`\"`, 800) + `", "b" : 1}`, 0},
		{"a long key after spaces", `{"a":1, "` + rep("k", 2000) + "\" \n: 2}", 2000},
		{"unterminated", `{"` + rep("k", 2000), 0},
		// The WEC's escapes are longer than encoding/json's: what counts is the key written again.
		{`1,022 "\u0041"`, key(rep(`\u0041`, 1022)), 0},
		{`1,023 "\u0041"`, key(rep(`\u0041`, 1023)), 1023},
		{`1,000 "\/"`, key(rep(`\/`, 1000)), 0},
		{`511 tabs as "\u0009", written "\t"`, key(rep(`\u0009`, 511)), 0},
		{`600 quotes as "\u0022", written "\""`, key(rep(`\u0022`, 600)), 1200},
		{`1,022 "é" as "\u00e9"`, key(rep(`\u00e9`, 1022)), 0},
		{"1,022 four-byte characters as surrogate pairs", key(rep(`\ud83d\ude00`, 1022)), 0},
		// The WEC's escapes are shorter than encoding/json's, which writes "<" as "\u003c".
		{`171 "<"`, key(rep("<", 171)), 1026},
		{`170 "<" and 2 characters: 1,022 as written`, key(rep("<", 170) + "kk"), 0},
		{`170 "<" and 3 characters: 1,023 as written`, key(rep("<", 170) + "kkk"), 1023},
		{`86 "&>"`, key(rep("&>", 86)), 1032},
		{"171 U+2028, three bytes each", key(rep("\u2028", 171)), 1026},
		// Multi-byte UTF-8 is one character, and so is each invalid byte (read as U+FFFD).
		{"1,022 four-byte characters", key(rep("😀", 1022)), 0},
		{"1,023 four-byte characters", key(rep("😀", 1023)), 1023},
		{"1,023 invalid bytes", key(rep("\xff", 1023)), 1023},
		// Where keys are.
		{`a long value of "<" is no key`, `{"a":"` + rep("<", 2000) + `","b":1}`, 0},
		{"a key in a nested list", `{"a":[1,{"b":[{"c":2},{"` + rep("<", 171) + `":1}]}]}`, 1026},
		{"a key with an invalid escape is left to decoding", key(rep(`\x`, 600)), 0},
	}
	for _, tc := range cases {
		if got := longKey([]byte(tc.raw)); got != tc.want {
			t.Errorf("%s: longKey = %d, want %d", tc.name, got, tc.want)
		}
		if refused, ok := applyRefuses(tc.raw); ok && refused != (tc.want > 0) {
			t.Errorf("%s: the apply body statusfold writes is refused: %v, want %v", tc.name, refused, tc.want > 0)
		}
	}
}

// applyRefuses says whether the YAML reading of apply bodies refuses the body statusfold writes
// for the status raw (decoded as the cache decodes it, written by encoding/json); ok is false
// when raw is not JSON.
func applyRefuses(raw string) (refused, ok bool) {
	var v any
	if err := utiljson.Unmarshal([]byte(raw), &v); err != nil {
		return false, false
	}
	body, err := json.Marshal(v)
	if err != nil {
		return false, false
	}
	_, err = yaml.YAMLToJSON(body)
	return err != nil, true
}

// A reported status with a key too long to write back is not decoded: reading it returns an
// OversizeError naming the key's length, the row error of its WEC.
func TestTransformRefusesLongKeys(t *testing.T) {
	ws := &controlv1alpha1.WorkStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "ws"}}
	ws.Status.Raw = []byte(`{"byName":{"` + strings.Repeat("n", 1500) + `":{"ready":true}}}`)
	if _, err := (Transform{MaxStatusBytes: 1 << 20}).Trim(ws); err != nil {
		t.Fatal(err)
	}
	e := Oversize(ws)
	if e == nil || e.KeyRunes != 1500 {
		t.Fatalf("oversize %+v, want one with a key of 1500 characters", e)
	}
	want := "status not evaluated: the reported status has a key of 1500 characters, over the 1022 a server-side apply accepts"
	if _, err := WorkStatusStatus(ws); err == nil || !strings.HasSuffix(err.Error(), ": "+want) || e.Error() != want {
		t.Errorf("reading the status: %v, want %q", err, want)
	}
}

// statusOfItems is a reported status of about n bytes: a list of small objects, as a status
// near the default cap of 256 KiB is (docs/rules.md "Reported status size"), each with the key k
// (as JSON writes it) besides its ordinary ones.
func statusOfItems(n int, k string) []byte {
	b := []byte(`{"items":[`)
	for i := 0; len(b) < n-100; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"name":"item-%05d","ready":true,"replicas":3,"%s":"x"}`, i, k)
	}
	return append(b, "]}"...)
}

// BenchmarkLongKey is the cost of the key check on a status of 256 KiB that holds no key too
// long: with only short keys; with a key of 200 bytes per item, long enough to be measured; and
// with a key of 204 bytes in escapes per item, each of which is decoded before it is measured.
func BenchmarkLongKey(b *testing.B) {
	for _, bc := range []struct{ name, key string }{
		{"keys=4B", "kkkk"},
		{"keys=200B", strings.Repeat("k", 200)},
		{"keys=200B-escaped", strings.Repeat(`\u0041`, 34)},
	} {
		raw := statusOfItems(256<<10, bc.key)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if n := longKey(raw); n != 0 {
					b.Fatalf("longKey = %d", n)
				}
			}
		})
	}
}
