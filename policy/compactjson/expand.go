package compactjson

import "math"

// Expand returns v in plain form (map[string]any for every *Object), sharing with v what has no
// object inside. The result is the caller's to read; the maps and lists it makes are new, but
// what it shares with v must not be modified.
func Expand(v any) any {
	e, _ := expand(v)
	return e
}

// expand is Expand, and whether the result differs from v (a new value).
func expand(v any) (any, bool) {
	switch x := v.(type) {
	case *Object:
		d := decoder{data: x.data, ext: x.ext}
		return d.value(), true
	case []any:
		return mapList(x, expand)
	}
	return v, false
}

// decoder reads an encoding: plain values, or compact ones (objects as views) for Get.
type decoder struct {
	data    string
	pos     int
	ext     *ext
	compact bool
}

// uvarint reads an unsigned varint.
func (d *decoder) uvarint() uint64 {
	var x uint64
	for shift := 0; ; shift += 7 {
		b := d.data[d.pos]
		d.pos++
		x |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return x
		}
	}
}

// objectKeys reads an object's tag and key set.
func (d *decoder) objectKeys() *keySet {
	d.pos++ // tagObject
	return d.ext.sets[d.uvarint()]
}

// value reads one value: in plain form, or in compact form (objects as views of the encoding)
// when d.compact.
func (d *decoder) value() any {
	start := d.pos
	tag := d.data[d.pos]
	d.pos++
	switch tag {
	case tagNull:
		return nil
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagInt:
		u := d.uvarint()
		return int64(u>>1) ^ -int64(u&1)
	case tagFloat:
		bits := uint64(0)
		for i := range 8 {
			bits |= uint64(d.data[d.pos+i]) << (8 * i)
		}
		d.pos += 8
		return math.Float64frombits(bits)
	case tagString:
		n := int(d.uvarint())
		s := d.data[d.pos : d.pos+n]
		d.pos += n
		return s
	case tagList:
		l := make([]any, d.uvarint())
		for i := range l {
			l[i] = d.value()
		}
		return l
	case tagObject:
		ks := d.ext.sets[d.uvarint()]
		if d.compact {
			for range ks.names {
				d.skip()
			}
			return &Object{data: d.data[start:d.pos], ext: d.ext}
		}
		m := make(map[string]any, len(ks.names))
		for _, k := range ks.names {
			m[k] = d.value()
		}
		return m
	default: // tagOther
		v := d.ext.other[d.uvarint()]
		if d.compact {
			return v
		}
		return Expand(v)
	}
}

// skip moves past one value.
func (d *decoder) skip() {
	tag := d.data[d.pos]
	d.pos++
	switch tag {
	case tagInt, tagOther:
		d.uvarint()
	case tagFloat:
		d.pos += 8
	case tagString:
		d.pos += int(d.uvarint())
	case tagList:
		for range d.uvarint() {
			d.skip()
		}
	case tagObject:
		for range d.ext.sets[d.uvarint()].names {
			d.skip()
		}
	}
}
