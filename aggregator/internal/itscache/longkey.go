package itscache

import (
	"bytes"
	"unicode/utf8"
	"unsafe"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/statusfold/statusfold/policy/applykey"
)

// MaxApplyKeyRunes is the longest map key a server-side apply body may hold (applykey.MaxRunes).
// A reported status with a longer key can be neither returned nor copied into a CombinedStatus,
// so it is not evaluated (docs/rules.md "Reported status size").
const MaxApplyKeyRunes = applykey.MaxRunes

// longKey returns applykey.Length of the first object key of the JSON document raw that is over
// MaxApplyKeyRunes, or 0 when there is none: the key's length as statusfold writes it in its own
// apply bodies, whatever escapes the WEC wrote it with. The scan is one pass over the bytes; a
// key is decoded and measured only when it has at least applykey.MinBytes bytes between its
// quotes as the WEC wrote it (a shorter one cannot be too long once written again).
func longKey(raw []byte) int {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		start := i
		for i++; i < len(raw) && raw[i] != '"'; i++ {
			if raw[i] == '\\' {
				i++ // the escaped character: an escaped quote does not end the string
			}
		}
		if i >= len(raw) {
			return 0 // unterminated: decoding the status reports it
		}
		j := i + 1
		for j < len(raw) && (raw[j] == ' ' || raw[j] == '\t' || raw[j] == '\n' || raw[j] == '\r') {
			j++
		}
		if j < len(raw) && raw[j] == ':' && i-start-1 >= applykey.MinBytes {
			if n := quotedKeyLength(raw[start : i+1]); n > 0 {
				return n
			}
		}
	}
	return 0
}

// quotedKeyLength is applykey.Length of the key that the JSON string quoted (quotes included)
// decodes to, decoded as the cache decodes the status's keys (compactjson: the bytes themselves
// when there is no escape and they are valid UTF-8, else k8s.io/apimachinery's json.Unmarshal),
// or 0 when quoted is no JSON string: decoding the status reports that.
func quotedKeyLength(quoted []byte) int {
	if b := quoted[1 : len(quoted)-1]; bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		return applykey.Length(unsafe.String(unsafe.SliceData(b), len(b))) // a view: Length keeps none
	}
	var k string
	if err := utiljson.Unmarshal(quoted, &k); err != nil {
		return 0
	}
	return applykey.Length(k)
}
