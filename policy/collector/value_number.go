package collector

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// numKind says how a number is held. Integers stay exact.
type numKind uint8

const (
	nInt numKind = iota
	nUint
	nFloat
	nBig // an integer beyond int64/uint64, from a numeric string or an exact sum
)

// number is one number of a collector's values. A Table holds one per row and aggregation
// subject, so it is 24 bytes: the int64, uint64 or float64 in one word (bits), by kind.
type number struct {
	kind numKind
	bits uint64   // nInt: the int64's bits; nUint: the uint64; nFloat: the float64's IEEE 754 bits
	big  *big.Int // nBig
}

func intNum(i int64) number     { return number{kind: nInt, bits: uint64(i)} }
func uintNum(u uint64) number   { return number{kind: nUint, bits: u} }
func floatNum(f float64) number { return number{kind: nFloat, bits: math.Float64bits(f)} }
func bigNum(b *big.Int) number  { return number{kind: nBig, big: b} }
func (n number) i() int64       { return int64(n.bits) }
func (n number) u() uint64      { return n.bits }
func (n number) f() float64     { return math.Float64frombits(n.bits) }

// text is the number's decimal text (docs/rules.md "Collectors"): integers exactly; a double as the shortest decimal
// that reads back as the same double, without an exponent when 1e-6 ≤ |x| < 1e21; NaN, +Inf, -Inf.
func (n number) text() string {
	switch n.kind {
	case nInt:
		return strconv.FormatInt(n.i(), 10)
	case nUint:
		return strconv.FormatUint(n.u(), 10)
	case nBig:
		return n.big.String()
	}
	return formatDouble(n.f())
}

func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case f == 0:
		return "0"
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. 1.5e-07: drop the exponent's leading zeros
	i := strings.IndexByte(s, 'e')
	mant, exp := s[:i+2], strings.TrimLeft(s[i+2:], "0")
	return mant + exp
}

// rank orders numbers by class: −Inf < finite < +Inf < NaN.
func (n number) rank() int {
	if n.kind != nFloat {
		return 1
	}
	switch {
	case math.IsNaN(n.f()):
		return 3
	case math.IsInf(n.f(), 1):
		return 2
	case math.IsInf(n.f(), -1):
		return 0
	}
	return 1
}

func (n number) bigFloat() *big.Float {
	switch n.kind {
	case nInt:
		return new(big.Float).SetInt64(n.i())
	case nUint:
		return new(big.Float).SetUint64(n.u())
	case nBig:
		return new(big.Float).SetPrec(uint(max(64, n.big.BitLen()))).SetInt(n.big)
	}
	return new(big.Float).SetFloat64(n.f())
}

// parseNumericString reads a string subject as a number (docs/rules.md "Collectors"): an optionally signed decimal
// with optional fraction and exponent. NaN, Inf, hex, surrounding spaces and quantities do not
// count. An integer stays exact; anything with a fraction or exponent is a double.
func parseNumericString(s string) (number, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if digits() == 0 {
		return number{}, false
	}
	integer := true
	if i < len(s) && s[i] == '.' {
		i++
		integer = false
		if digits() == 0 {
			return number{}, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		integer = false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return number{}, false
		}
	}
	if i != len(s) {
		return number{}, false
	}
	if integer {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			return intNum(v), true
		}
		b, ok := new(big.Int).SetString(strings.TrimPrefix(s, "+"), 10)
		return bigNum(b), ok
	}
	// Syntax is checked above, so the only possible error is ErrRange, where ParseFloat returns
	// the correctly rounded ±Inf or 0: a decimal too large for a double is an infinite double.
	f, _ := strconv.ParseFloat(s, 64)
	return floatNum(f), true
}
