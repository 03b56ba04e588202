package sizebudget

import "encoding/json"

// The budget's numbers (docs/rules.md "Size budget").
const (
	// EtcdRequestLimit is etcd's default --max-request-bytes: the largest transaction, key and
	// stored object with its metadata and managed fields, that etcd accepts.
	EtcdRequestLimit = 1536 * 1024
	// DefaultBytes is the default budget of the encoded object statusfold writes (JSON, without
	// managed fields): two thirds of EtcdRequestLimit, leaving 512 KiB for what the apiserver adds
	// (managed fields, uid, timestamps, resourceVersion) and etcd's own framing.
	DefaultBytes = 1024 * 1024
	// MinBytes is the smallest budget: the smallest a flag may set and the floor of a budget
	// lowered after the apiserver found a write too large.
	MinBytes = 16 * 1024
)

// encodedLen is the length of v's JSON encoding (0 when it has none), counted as it is encoded
// rather than kept: measuring a large object allocates little.
func encodedLen(v any) int {
	var n counter
	if err := json.NewEncoder(&n).Encode(v); err != nil {
		return 0
	}
	return int(n) - 1 // Encode ends with a newline
}

// counter is an io.Writer that counts the bytes written to it.
type counter int

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

// EncodedSize is the length of v's JSON encoding: the size the budget applies to.
func EncodedSize(v any) int { return encodedLen(v) }
