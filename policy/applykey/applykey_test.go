package applykey

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

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

// TestMinBytesBoundsAnySpelling: however a JSON writer spells a key, each byte between its quotes
// is at most 6 characters once the key is decoded and written again, so a key spelled in fewer
// than MinBytes bytes is never over MaxRunes (the ITS cache measures only longer ones).
func TestMinBytesBoundsAnySpelling(t *testing.T) {
	for _, spelled := range []string{
		"k", "<", ">", "&", "é", "\u2028", "😀", "\xff", `\u0041`, `\u003c`, `\u0000`, `\/`, `\"`, `\\`,
		`\b`, `\n`, `\u2028`, `\ud83d\ude00`, `\ud800`,
	} {
		var k string
		if err := json.Unmarshal([]byte(`"`+spelled+`"`), &k); err != nil {
			t.Fatalf("%q: %v", spelled, err)
		}
		written, _ := json.Marshal(k)
		if n := utf8.RuneCount(written) - 2; n > 6*len(spelled) {
			t.Errorf("%q (%d bytes) is written in %d characters", spelled, len(spelled), n)
		}
	}
	if n := Length(strings.Repeat("<", MinBytes)); n == 0 {
		t.Errorf("Length of %d \"<\" = 0: MinBytes is not the shortest key over MaxRunes", MinBytes)
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
