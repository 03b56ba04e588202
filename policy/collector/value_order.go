package collector

import (
	"strings"
)

// compareNumbers is the total order of docs/rules.md "Collectors" on numbers, exact across kinds.
func compareNumbers(a, b number) int {
	if ra, rb := a.rank(), b.rank(); ra != rb || ra != 1 {
		return cmpInt(ra, rb)
	}
	switch {
	case a.kind == nInt && b.kind == nInt:
		return cmpInt(a.i(), b.i())
	case a.kind == nFloat && b.kind == nFloat:
		return cmpInt(a.f(), b.f())
	case a.kind == nUint && b.kind == nUint:
		return cmpInt(a.u(), b.u())
	}
	return a.bigFloat().Cmp(b.bigFloat())
}

func cmpInt[T int | int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareValues is the group order of docs/rules.md "Collectors": across kinds null < bool < number < string < list
// < map; numbers by value, strings bytewise, lists and maps lexicographically.
func compareValues(a, b *jvalue) int {
	if a.kind != b.kind {
		return cmpInt(int(a.kind), int(b.kind))
	}
	switch a.kind {
	case jBool:
		switch {
		case a.b == b.b:
			return 0
		case !a.b:
			return -1
		}
		return 1
	case jNumber:
		return compareNumbers(a.n, b.n)
	case jString:
		return strings.Compare(a.s, b.s)
	case jList:
		for i := 0; i < len(a.c.vals) && i < len(b.c.vals); i++ {
			if c := compareValues(&a.c.vals[i], &b.c.vals[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(a.c.vals), len(b.c.vals))
	case jMap:
		for i := 0; i < len(a.c.keys) && i < len(b.c.keys); i++ {
			if c := strings.Compare(a.c.keys[i], b.c.keys[i]); c != 0 {
				return c
			}
			if c := compareValues(&a.c.vals[i], &b.c.vals[i]); c != 0 {
				return c
			}
		}
		return cmpInt(len(a.c.keys), len(b.c.keys))
	}
	return 0
}
