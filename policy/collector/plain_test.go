package collector

import (
	"encoding/json"
	"testing"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

func TestPlainValue(t *testing.T) {
	cases := []struct {
		v    controlv1alpha1.Value
		want string // JSON
	}{
		{vnull(), `null`},
		{vs("x"), `"x"`},
		{vb(false), `false`},
		{vn("123456789012345678901234567890"), `123456789012345678901234567890`},
		{vn("-1.5e-7"), `-1.5e-7`},
		{vn("NaN"), `"NaN"`},
		{vn("+Inf"), `"+Inf"`},
		{varr(`[1,{"a":null,"b":[]}]`), `[1,{"a":null,"b":[]}]`},
		{vobj(`{"big":123456789012345678901234567890,"x":1.5e-7}`), `{"big":123456789012345678901234567890,"x":1.5e-7}`},
	}
	for _, tc := range cases {
		b, err := json.Marshal(PlainValue(tc.v))
		if err != nil || string(b) != tc.want {
			t.Errorf("PlainValue(%+v) = %s (%v), want %s", tc.v, b, err, tc.want)
		}
	}
}
