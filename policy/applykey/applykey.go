// Package applykey holds the one limit on object keys that a server-side apply body imposes: the
// apiserver reads an apply patch as YAML, whose parser takes a key of at most MaxRunes characters
// between its quotes (sigs.k8s.io/yaml refuses a longer one: "error converting YAML to JSON").
// Whatever statusfold writes with apply (a CombinedStatus cell, a returned status) must hold no
// longer key, or the write is refused on every attempt (docs/rules.md "Reported status size").
//
// The package is pure and cheap: a key is measured only when its length in bytes could make it
// too long once written as JSON.
package applykey

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxRunes is the longest object key, in characters as written in a JSON apply body, that the
// apiserver accepts.
const MaxRunes = 1022

// MinBytes is the shortest key, in bytes, that can be over MaxRunes as JSON: encoding/json writes
// one byte as at most 6 characters (\u00XX).
const MinBytes = MaxRunes/6 + 1

// MayBeTooLong reports whether the key that spelled decodes to can be over MaxRunes once
// encoding/json writes it, where spelled is a JSON string's bytes between its quotes as any JSON
// writer may have escaped them. It is a bound from counts of a few bytes, without decoding, so
// that only a key for which it is true need be decoded and measured with Length: each byte of
// spelled is at most one character once written again (an escape is written in at most as many
// characters as it has), but for "<", ">" and "&" (written "\u003c": six) and the first byte of
// U+2028 and U+2029 (three bytes, written "\u2028": six). It is false below MinBytes bytes.
func MayBeTooLong(spelled []byte) bool {
	if len(spelled) < MinBytes || len(spelled) > MaxRunes {
		return len(spelled) > MaxRunes
	}
	count := func(c byte) int { return bytes.Count(spelled, []byte{c}) }
	return len(spelled)+5*(count('<')+count('>')+count('&'))+3*count(0xE2) > MaxRunes
}

// Length returns the number of characters key k takes between its quotes in a JSON apply body
// (as encoding/json writes it: escapes count as written) when that is over MaxRunes, else 0.
func Length(k string) int {
	if len(k) < MinBytes {
		return 0
	}
	if len(k) <= MaxRunes && !needsEscape(k) {
		return 0
	}
	b, _ := json.Marshal(k) // a string always marshals
	if n := utf8.RuneCount(b) - 2; n > MaxRunes {
		return n
	}
	return 0
}

// needsEscape says whether encoding/json writes k other than as its bytes.
func needsEscape(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// TooLong is the error for a key of n characters.
func TooLong(n int) string {
	return "a map key of " + strconv.Itoa(n) + " characters; an apply body takes keys of at most " +
		strconv.Itoa(MaxRunes) + " characters"
}

// Find returns the path (".a.b[2]") and length of the first key, in sorted key order, of the
// decoded JSON value v (maps and lists as encoding/json decodes them) whose Length is over
// MaxRunes, or "", 0 when there is none.
func Find(v any) (string, int) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if n := Length(k); n > 0 {
				return "." + strings.ToValidUTF8(k[:32], "") + "…", n
			}
			if p, n := Find(t[k]); n > 0 {
				return "." + k + p, n
			}
		}
	case []any:
		for i, x := range t {
			if p, n := Find(x); n > 0 {
				return "[" + strconv.Itoa(i) + "]" + p, n
			}
		}
	}
	return "", 0
}
