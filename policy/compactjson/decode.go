package compactjson

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	kjson "sigs.k8s.io/json"
)

// Decode returns the JSON object data in compact form: what Compact(v, sets) returns for the
// value v that k8s.io/apimachinery's json.Unmarshal decodes from data (integers that fit an int64
// as int64, other numbers as float64, the last of repeated keys), made from data's bytes without
// decoding it into maps first. data is not retained.
//
// It fails on anything that is not one JSON object, and on JSON that json.Unmarshal would reject
// (invalid syntax, a number out of float64's range, nesting deeper than maxDepth); its error
// says where, not always in json.Unmarshal's words.
func Decode(data []byte, sets *KeySets) (*Object, error) {
	d := jsonDecoders.Get().(*jsonDecoder)
	defer d.release()
	d.in, d.pos, d.enc.ks = data, 0, sets
	d.space()
	if d.pos == len(d.in) || d.in[d.pos] != '{' {
		return nil, d.syntax("want an object")
	}
	if err := d.value(0); err != nil {
		return nil, err
	}
	if d.space(); d.pos != len(d.in) {
		return nil, d.syntax("data after the object")
	}
	return &Object{data: string(d.renumber()), ext: sets.shape(d.order)}, nil
}

// maxDepth is the deepest nesting Decode accepts (encoding/json's limit).
const maxDepth = 10000

// jsonDecoder decodes one JSON value into an encoder's buffer. Objects are written in two steps:
// their values first, in the order of the input, then moved into key order behind the object's
// tag (fields and moved are scratch for that). Key sets get indexes in the order their objects
// end; renumber gives them Compact's order (first appearance in the encoding) at the end.
type jsonDecoder struct {
	in  []byte
	pos int
	enc encoder
	// fields holds the fields of the objects being decoded (a stack: each object's from where it
	// started), names the key lists handed to KeySets.get.
	fields []field
	names  []string
	moved  []byte // an object's values while they are put in key order
	out    []byte // renumber's output
	order  []*keySet
	newIdx []int // renumber: each key set's index in order (-1: not yet seen)
}

// field is one field of an object being decoded: its key and where its value is in enc.buf.
type field struct {
	key        string // may be a view of in: only compared, and copied by KeySets when kept
	start, end int
}

var jsonDecoders = sync.Pool{New: func() any { return &jsonDecoder{} }}

func (d *jsonDecoder) release() {
	d.in = nil
	d.enc.buf, d.enc.sets, d.enc.index, d.enc.ks = d.enc.buf[:0], d.enc.sets[:0], nil, nil
	clear(d.enc.sets[:cap(d.enc.sets)])
	d.fields, d.names = d.fields[:0], d.names[:0]
	clear(d.fields[:cap(d.fields)])
	clear(d.names[:cap(d.names)])
	d.moved, d.out, d.order, d.newIdx = d.moved[:0], d.out[:0], d.order[:0], d.newIdx[:0]
	clear(d.order[:cap(d.order)])
	jsonDecoders.Put(d)
}

func (d *jsonDecoder) syntax(msg string) error {
	return fmt.Errorf("compactjson: offset %d: %s", d.pos, msg)
}

// space skips white space.
func (d *jsonDecoder) space() {
	for d.pos < len(d.in) {
		switch d.in[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// value decodes the value at d.pos (after white space) onto the encoding.
func (d *jsonDecoder) value(depth int) error {
	d.space()
	if d.pos == len(d.in) {
		return d.syntax("unexpected end of JSON input")
	}
	e := &d.enc
	switch c := d.in[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.list(depth + 1)
	case c == '"':
		s, err := d.str()
		if err != nil {
			return err
		}
		e.string(s)
	case c == 't':
		return d.literal("true", tagTrue)
	case c == 'f':
		return d.literal("false", tagFalse)
	case c == 'n':
		return d.literal("null", tagNull)
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	default:
		return d.syntax(fmt.Sprintf("invalid character %q looking for a value", c))
	}
	return nil
}

func (d *jsonDecoder) literal(lit string, tag byte) error {
	if !bytes.HasPrefix(d.in[d.pos:], []byte(lit)) {
		return d.syntax("invalid literal")
	}
	d.pos += len(lit)
	d.enc.buf = append(d.enc.buf, tag)
	return nil
}

// number decodes a number: an int64 when it has no fraction and fits, else a float64 (as
// k8s.io/apimachinery's json.Unmarshal: "1e2" is the float 100).
func (d *jsonDecoder) number() error {
	start := d.pos
	if d.in[d.pos] == '-' {
		d.pos++
	}
	intStart := d.pos
	digits := d.digits()
	if digits == 0 || digits > 1 && d.in[intStart] == '0' {
		return d.syntax("invalid number")
	}
	integer := true
	if d.pos < len(d.in) && d.in[d.pos] == '.' {
		integer = false
		d.pos++
		if d.digits() == 0 {
			return d.syntax("invalid number")
		}
	}
	exp := false
	if d.pos < len(d.in) && (d.in[d.pos] == 'e' || d.in[d.pos] == 'E') {
		exp = true
		d.pos++
		if d.pos < len(d.in) && (d.in[d.pos] == '+' || d.in[d.pos] == '-') {
			d.pos++
		}
		if d.digits() == 0 {
			return d.syntax("invalid number")
		}
	}
	lit := d.in[start:d.pos]
	e := &d.enc
	if integer && !exp && digits <= 18 { // fits an int64 whatever the digits
		var n int64
		for _, c := range d.in[intStart:d.pos] {
			n = n*10 + int64(c-'0')
		}
		if start != intStart {
			n = -n
		}
		e.int(n)
		return nil
	}
	if integer {
		if n, err := strconv.ParseInt(string(lit), 10, 64); err == nil {
			e.int(n)
			return nil
		}
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return d.syntax(fmt.Sprintf("number %s: %v", lit, err))
	}
	e.float(f)
	return nil
}

// digits skips decimal digits and returns how many.
func (d *jsonDecoder) digits() int {
	start := d.pos
	for d.pos < len(d.in) && d.in[d.pos] >= '0' && d.in[d.pos] <= '9' {
		d.pos++
	}
	return d.pos - start
}

// str decodes the string at d.pos. Its result is a view of d.in when the string has no escapes
// and is valid UTF-8 (the common case), else a new string decoded as json.Unmarshal decodes it.
func (d *jsonDecoder) str() (string, error) {
	start := d.pos
	d.pos++
	plain := true
	for ; d.pos < len(d.in); d.pos++ {
		switch c := d.in[d.pos]; {
		case c == '"':
			d.pos++
			raw := d.in[start+1 : d.pos-1]
			if plain && utf8.Valid(raw) {
				return unsafe.String(unsafe.SliceData(raw), len(raw)), nil
			}
			var s string
			if err := kjson.UnmarshalCaseSensitivePreserveInts(d.in[start:d.pos], &s); err != nil {
				return "", fmt.Errorf("compactjson: offset %d: %w", start, err)
			}
			return s, nil
		case c == '\\':
			plain = false
			d.pos++ // the escaped character: an escaped quote does not end the string
		case c < 0x20:
			return "", d.syntax("control character in a string")
		}
	}
	return "", d.syntax("unexpected end of JSON input in a string")
}

// members reads the members of a list or an object, after its opening bracket up to its closing
// one (end), calling member for each.
func (d *jsonDecoder) members(end byte, member func() error) error {
	if d.space(); d.pos < len(d.in) && d.in[d.pos] == end {
		d.pos++
		return nil
	}
	for {
		if err := member(); err != nil {
			return err
		}
		if d.space(); d.pos == len(d.in) {
			return d.syntax("unexpected end of JSON input")
		}
		c := d.in[d.pos]
		d.pos++
		if c == end {
			return nil
		}
		if c != ',' {
			return d.syntax(fmt.Sprintf("invalid character %q after a value, want , or %c", c, end))
		}
	}
}

func (d *jsonDecoder) list(depth int) error {
	if depth > maxDepth {
		return d.syntax("nested too deep")
	}
	d.pos++ // '['
	e := &d.enc
	countAt := len(e.buf)
	e.buf = append(e.buf, tagList)
	n := 0
	if err := d.members(']', func() error {
		n++
		return d.value(depth)
	}); err != nil {
		return err
	}
	// The count goes before the elements, which are moved to make room for it.
	var count [binary.MaxVarintLen64]byte
	e.buf = slices.Insert(e.buf, countAt+1, count[:binary.PutUvarint(count[:], uint64(n))]...)
	return nil
}

func (d *jsonDecoder) object(depth int) error {
	if depth > maxDepth {
		return d.syntax("nested too deep")
	}
	d.pos++ // '{'
	e := &d.enc
	start, first := len(e.buf), len(d.fields)
	if err := d.members('}', func() error {
		if d.space(); d.pos == len(d.in) || d.in[d.pos] != '"' {
			return d.syntax("want a field name")
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		if d.space(); d.pos == len(d.in) || d.in[d.pos] != ':' {
			return d.syntax("want : after a field name")
		}
		d.pos++
		vstart := len(e.buf)
		if err := d.value(depth); err != nil {
			return err
		}
		d.fields = append(d.fields, field{key: key, start: vstart, end: len(e.buf)})
		return nil
	}); err != nil {
		return err
	}
	fs := d.fields[first:]
	// Key order; of repeated keys the last one counts (stable sort: the last is the last of its run).
	slices.SortStableFunc(fs, func(a, b field) int { return strings.Compare(a.key, b.key) })
	names := d.names[:0]
	kept := fs[:0]
	for i, f := range fs {
		if i+1 < len(fs) && fs[i+1].key == f.key {
			continue
		}
		kept = append(kept, f)
		names = append(names, f.key)
	}
	ks := e.ks.get(names)
	d.names = names
	d.moved = append(d.moved[:0], e.buf[start:]...)
	e.buf = e.buf[:start]
	e.objectTag(ks)
	for _, f := range kept {
		e.buf = append(e.buf, d.moved[f.start-start:f.end-start]...)
	}
	clear(d.fields[first:])
	d.fields = d.fields[:first]
	return nil
}

// renumber rewrites the encoding with the key sets' indexes in the order of first appearance (as
// Compact numbers them), leaving the key sets in that order in d.order, and returns it.
func (d *jsonDecoder) renumber() []byte {
	d.newIdx = slices.Grow(d.newIdx[:0], len(d.enc.sets))[:len(d.enc.sets)]
	for i := range d.newIdx {
		d.newIdx[i] = -1
	}
	r := decoder{data: unsafe.String(unsafe.SliceData(d.enc.buf), len(d.enc.buf))}
	d.out = d.out[:0]
	d.copyValue(&r)
	return d.out
}

// copyValue copies one value from r to d.out, renumbering its objects' key sets.
func (d *jsonDecoder) copyValue(r *decoder) {
	start := r.pos
	tag := r.data[r.pos]
	r.pos++
	switch tag {
	case tagList:
		n := r.uvarint()
		d.out = append(d.out, r.data[start:r.pos]...)
		for range n {
			d.copyValue(r)
		}
		return
	case tagObject:
		old := r.uvarint()
		if d.newIdx[old] < 0 {
			d.newIdx[old] = len(d.order)
			d.order = append(d.order, d.enc.sets[old])
		}
		d.out = binary.AppendUvarint(append(d.out, tagObject), uint64(d.newIdx[old]))
		for range d.enc.sets[old].names {
			d.copyValue(r)
		}
		return
	}
	r.pos = start
	r.skip()
	d.out = append(d.out, r.data[start:r.pos]...)
}
