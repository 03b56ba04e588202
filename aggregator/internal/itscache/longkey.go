package itscache

import (
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/policy/applykey"
)

// MaxApplyKeyRunes is the longest map key a server-side apply body may hold (applykey.MaxRunes).
// A reported status with a longer key can be neither returned nor copied into a CombinedStatus,
// so it is not evaluated (docs/rules.md "Reported status size").
const MaxApplyKeyRunes = applykey.MaxRunes

// longKey returns the length, in characters, of the first object key of the JSON document raw
// longer than an apply body may hold, or 0 when there is none. The scan is one pass over the
// bytes; only when it finds a candidate is the document read as the apiserver reads an apply
// body, so that the verdict is the apiserver's.
func longKey(raw []byte) int {
	n := scanLongKey(raw)
	if n == 0 {
		return 0
	}
	if _, err := yaml.YAMLToJSON(raw); err == nil {
		return 0
	}
	return n
}

// scanLongKey returns the length in characters of the first JSON string of raw that is followed
// by ':' (an object key) and longer than MaxApplyKeyRunes, or 0.
func scanLongKey(raw []byte) int {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		start := i + 1
		for i = start; i < len(raw) && raw[i] != '"'; i++ {
			if raw[i] == '\\' {
				i++
			}
		}
		end := i
		j := end + 1
		for j < len(raw) && (raw[j] == ' ' || raw[j] == '\t' || raw[j] == '\n' || raw[j] == '\r') {
			j++
		}
		if j < len(raw) && raw[j] == ':' && end-start > MaxApplyKeyRunes {
			if n := utf8.RuneCount(raw[start:min(end, len(raw))]); n > MaxApplyKeyRunes {
				return n
			}
		}
	}
	return 0
}
