package itscache

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// TestLongKey pins where a key becomes too long for a server-side apply body: 1,022 characters
// between the quotes are written, 1,023 are refused by the YAML reading of the apply body; a long
// string value is no key; escapes and multi-byte characters count as the parser counts them.
func TestLongKey(t *testing.T) {
	key := func(s string) string { return `{"status":{"nested":{"` + s + `":1}}}` }
	cases := []struct {
		name string
		raw  string
		want int
	}{
		{"1,022 characters", key(strings.Repeat("k", 1022)), 0},
		{"1,023 characters", key(strings.Repeat("k", 1023)), 1023},
		{"100,000 characters", key(strings.Repeat("k", 100000)), 100000},
		{"1,023 two-byte characters", key(strings.Repeat("é", 1023)), 1023},
		{"a long value is no key", `{"a":"` + strings.Repeat("v", 5000) + `"}`, 0},
		{"escaped quotes inside a long value", `{"a":"` + strings.Repeat(`\"`, 800) + `", "b" : 1}`, 0},
		{"a long key after spaces", `{"a":1, "` + strings.Repeat("k", 2000) + "\" \n: 2}", 2000},
		{"unterminated", `{"` + strings.Repeat("k", 2000), 0},
	}
	for _, tc := range cases {
		if got := longKey([]byte(tc.raw)); got != tc.want {
			t.Errorf("%s: longKey = %d, want %d", tc.name, got, tc.want)
		}
	}
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
// near the default cap of 256 KiB is (docs/rules.md "Reported status size"), each with a key of
// keyBytes bytes besides its ordinary ones.
func statusOfItems(n, keyBytes int) []byte {
	b := []byte(`{"items":[`)
	for i := 0; len(b) < n-100; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"name":"item-%05d","ready":true,"replicas":3,"%s":"x"}`, i, strings.Repeat("k", keyBytes))
	}
	return append(b, "]}"...)
}

// BenchmarkLongKey is the cost of the key check on a status of 256 KiB that holds no key too
// long: with only short keys, and with a key of 200 bytes (long enough to be measured) per item.
func BenchmarkLongKey(b *testing.B) {
	for _, kb := range []int{4, 200} {
		raw := statusOfItems(256<<10, kb)
		b.Run(fmt.Sprintf("keys=%dB", kb), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if n := longKey(raw); n != 0 {
					b.Fatalf("longKey = %d", n)
				}
			}
		})
	}
}
