package itscache

import (
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
// key is decoded and measured only when its bytes as the WEC wrote them can make it too long
// once written again (applykey.MayBeTooLong).
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
		key := raw[start+1 : i]
		if j < len(raw) && raw[j] == ':' && len(key) >= applykey.MinBytes && applykey.MayBeTooLong(key) {
			if n := quotedKeyLength(raw[start : i+1]); n > 0 {
				return n
			}
		}
	}
	return 0
}

// quotedKeyLength is applykey.Length of the key that the JSON string quoted (quotes included)
// decodes to, decoded as the cache decodes the status's keys (k8s.io/apimachinery's
// json.Unmarshal, as compactjson does), or 0 when quoted is no JSON string: decoding the status
// reports that.
func quotedKeyLength(quoted []byte) int {
	var k string
	if err := utiljson.Unmarshal(quoted, &k); err != nil {
		return 0
	}
	return applykey.Length(k)
}
