package collector

import (
	"math"
	"math/big"
)

// sumPrec is enough mantissa bits to hold any sum of doubles exactly: doubles span 2^-1074 to
// 2^1024, plus headroom for carries.
const sumPrec = 2200

// exactSum is a sum that values can be added to and removed from without rounding, so that a
// table's aggregates do not depend on the order of its updates. Integers stay exact (int64 until
// it overflows, then a big.Int); finite doubles are summed exactly in a big.Float and rounded once
// when read; NaN and infinities are counted.
type exactSum struct {
	small         int64
	big           *big.Int   // nil until small overflowed; then the integer total is small+big
	fl            *big.Float // exact sum of the finite doubles; nil until one was added
	doubles       int        // how many doubles (of any value) are in the sum
	nan, pos, neg int        // how many NaN, +Inf, -Inf
}

// add adds n (sign +1) or removes it (sign -1).
func (s *exactSum) add(n number, sign int) {
	switch n.kind {
	case nInt:
		s.addInt(n.i(), sign)
	case nUint:
		if n.u() <= math.MaxInt64 {
			s.addInt(int64(n.u()), sign)
		} else {
			s.addBig(new(big.Int).SetUint64(n.u()), sign)
		}
	case nBig:
		s.addBig(n.big, sign)
	case nFloat:
		s.doubles += sign
		switch {
		case math.IsNaN(n.f()):
			s.nan += sign
		case math.IsInf(n.f(), 1):
			s.pos += sign
		case math.IsInf(n.f(), -1):
			s.neg += sign
		default:
			if s.fl == nil {
				s.fl = new(big.Float).SetPrec(sumPrec)
			}
			d := new(big.Float).SetFloat64(n.f())
			if sign < 0 {
				d.Neg(d)
			}
			s.fl.Add(s.fl, d)
		}
	}
}

func (s *exactSum) addInt(x int64, sign int) {
	if sign < 0 {
		if x == math.MinInt64 {
			s.addBig(big.NewInt(x), sign)
			return
		}
		x = -x
	}
	r := s.small + x
	if (x > 0 && r < s.small) || (x < 0 && r > s.small) {
		s.addBig(big.NewInt(x), 1)
		return
	}
	s.small = r
}

func (s *exactSum) addBig(x *big.Int, sign int) {
	if s.big == nil {
		s.big = new(big.Int)
	}
	if sign < 0 {
		s.big.Sub(s.big, x)
	} else {
		s.big.Add(s.big, x)
	}
}

// special returns the sum's value when NaN or infinities decide it.
func (s *exactSum) special() (float64, bool) {
	switch {
	case s.nan > 0 || (s.pos > 0 && s.neg > 0):
		return math.NaN(), true
	case s.pos > 0:
		return math.Inf(1), true
	case s.neg > 0:
		return math.Inf(-1), true
	}
	return 0, false
}

// total is the exact finite total as a big.Float.
func (s *exactSum) total() *big.Float {
	t := new(big.Float).SetPrec(sumPrec).SetInt64(s.small)
	if s.big != nil {
		t.Add(t, new(big.Float).SetPrec(sumPrec).SetInt(s.big))
	}
	if s.fl != nil {
		t.Add(t, s.fl)
	}
	return t
}

// result is SUM: an exact integer when only integers were added, else the correctly rounded
// double of the exact total.
func (s *exactSum) result() number {
	if s.doubles == 0 {
		if s.big == nil {
			return intNum(s.small)
		}
		b := new(big.Int).Add(s.big, big.NewInt(s.small))
		if b.IsInt64() {
			return intNum(b.Int64())
		}
		return bigNum(b)
	}
	if f, ok := s.special(); ok {
		return floatNum(f)
	}
	f, _ := s.total().Float64()
	return floatNum(f)
}

// average is AVG over count values: a double, NaN when there are none.
func (s *exactSum) average(count int) number {
	if count == 0 {
		return floatNum(math.NaN())
	}
	if f, ok := s.special(); ok {
		return floatNum(f)
	}
	q := new(big.Float).SetPrec(sumPrec).Quo(s.total(), new(big.Float).SetInt64(int64(count)))
	f, _ := q.Float64()
	return floatNum(f)
}
