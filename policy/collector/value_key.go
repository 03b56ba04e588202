package collector

import (
	"math"
	"math/big"
	"strconv"
)

// keyText is a text that two numbers share exactly when they are equal as JSON values
// (2 and 2.0 are one group).
func (n number) keyText() string {
	if n.kind == nFloat && n.rank() == 1 && n.f() == math.Trunc(n.f()) {
		if math.Abs(n.f()) < 1<<63 {
			return strconv.FormatInt(int64(n.f()), 10)
		}
		i, _ := new(big.Float).SetFloat64(n.f()).Int(nil)
		return i.String()
	}
	if n.kind == nFloat {
		return strconv.FormatFloat(n.f(), 'g', -1, 64) // non-integral: never equal to an integer's text
	}
	return n.text()
}

// appendKey appends an encoding of v to buf such that two values have the same encoding exactly
// when they are equal as JSON values.
func appendKey(buf []byte, v *jvalue) []byte {
	switch v.kind {
	case jNull:
		return append(buf, 'z')
	case jBool:
		if v.b {
			return append(buf, 't')
		}
		return append(buf, 'f')
	case jNumber:
		buf = append(buf, 'n')
		buf = append(buf, v.n.keyText()...)
		return append(buf, ';')
	case jString:
		return appendKeyString(buf, v.s)
	case jList:
		buf = append(buf, 'l')
		buf = strconv.AppendInt(buf, int64(len(v.c.vals)), 10)
		buf = append(buf, ':')
		for i := range v.c.vals {
			buf = appendKey(buf, &v.c.vals[i])
		}
		return buf
	}
	buf = append(buf, 'm')
	buf = strconv.AppendInt(buf, int64(len(v.c.keys)), 10)
	buf = append(buf, ':')
	for i, k := range v.c.keys {
		buf = appendKeyString(buf, k)
		buf = appendKey(buf, &v.c.vals[i])
	}
	return buf
}

func appendKeyString(buf []byte, s string) []byte {
	buf = append(buf, 's')
	buf = strconv.AppendInt(buf, int64(len(s)), 10)
	buf = append(buf, ':')
	return append(buf, s...)
}
