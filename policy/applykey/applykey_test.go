package applykey

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestLengthIsTheApiserversVerdict: Length is over MaxRunes exactly when the YAML reader of apply
// bodies refuses the key, as encoding/json writes it.
func TestLengthIsTheApiserversVerdict(t *testing.T) {
	for _, k := range []string{
		strings.Repeat("x", 1022), strings.Repeat("x", 1023),
		strings.Repeat("é", 1022), strings.Repeat("é", 1023),
		strings.Repeat("<", 170), strings.Repeat("<", 171), strings.Repeat("\n", 511), strings.Repeat("\n", 512),
	} {
		doc, _ := applyBody(k)
		_, err := yaml.YAMLToJSON(doc)
		if n := Length(k); (n > 0) != (err != nil) {
			t.Errorf("key of %d bytes: Length %d, apiserver's reader: %v", len(k), n, err)
		}
	}
	if n := Length(strings.Repeat("x", 1023)); n != 1023 {
		t.Errorf("Length of 1,023 characters = %d", n)
	}
}

func applyBody(k string) ([]byte, error) {
	q, err := json.Marshal(k)
	return []byte(`{` + string(q) + `:1}`), err
}

// TestMayBeTooLongBoundsAnySpelling: however a JSON writer spells a key, MayBeTooLong is true
// when the key is over MaxRunes once decoded and written again. For each way of spelling one
// character, the longest repetition of it for which MayBeTooLong is false is not too long.
func TestMayBeTooLongBoundsAnySpelling(t *testing.T) {
	for _, spelled := range []string{
		"k", "<", ">", "&", "é", "\u2028", "\u2029", "😀", "\xff", "\xe2", `\u0041`, `\u003c`, `\u0000`,
		`\u2028`, `\/`, `\"`, `\\`, `\b`, `\f`, `\n`, `\ud83d\ude00`, `\ud800`,
	} {
		c := 0
		for !MayBeTooLong([]byte(strings.Repeat(spelled, c+1))) {
			c++
		}
		var k string
		if err := json.Unmarshal([]byte(`"`+strings.Repeat(spelled, c)+`"`), &k); err != nil {
			t.Fatalf("%q: %v", spelled, err)
		}
		if n := Length(k); n > 0 {
			t.Errorf("%d × %q: MayBeTooLong is false, but the key is written in %d characters", c, spelled, n)
		}
	}
	for _, tc := range []struct {
		spelled string
		want    bool
	}{
		{strings.Repeat("<", MinBytes-1), false},
		{strings.Repeat("<", MinBytes), true},
		{strings.Repeat("<", 170) + "kk", false}, // written in 1,022 characters
		{strings.Repeat("<", 170) + "kkk", true},
		{strings.Repeat("k", MaxRunes), false},
		{strings.Repeat("k", MaxRunes+1), true},
		{strings.Repeat(`\u0041`, 100), false}, // 600 bytes: "A" × 100 once written again
	} {
		if got := MayBeTooLong([]byte(tc.spelled)); got != tc.want {
			t.Errorf("MayBeTooLong(%d bytes %.12q…) = %v, want %v", len(tc.spelled), tc.spelled, got, tc.want)
		}
	}
}

func TestFind(t *testing.T) {
	long := strings.Repeat("y", 1023)
	v := map[string]any{"a": []any{int64(1), map[string]any{strings.Repeat("y", 1022): 1, "b": map[string]any{long: 1}}}}
	if p, n := Find(v); n != 1023 || p != ".a[1].b."+long[:32]+"…" {
		t.Errorf("Find = %q, %d", p, n)
	}
	if _, n := Find(map[string]any{strings.Repeat("y", 1022): 1}); n != 0 {
		t.Errorf("Find at 1,022 characters = %d", n)
	}
}

// BenchmarkLength: an ordinary key costs a length comparison; a long one is measured.
func BenchmarkLength(b *testing.B) {
	for _, k := range []string{"readyReplicas", strings.Repeat("x", 1022), strings.Repeat("x", 1023)} {
		b.Run(strconv.Itoa(len(k)), func(b *testing.B) {
			for b.Loop() {
				Length(k)
			}
		})
	}
}
