package collector

import (
	"encoding/json"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// toValue converts to the CombinedStatus value union. A list or map is plain JSON (docs/rules.md "Wire format"): its
// numbers are JSON numbers, written as the top-level `float` text is.
func (v *jvalue) toValue() controlv1alpha1.Value {
	switch v.kind {
	case jBool:
		b := v.b
		return controlv1alpha1.Value{Type: controlv1alpha1.TypeBool, Bool: &b}
	case jNumber:
		return numberValue(v.n)
	case jString:
		s := v.s
		return controlv1alpha1.Value{Type: controlv1alpha1.TypeString, String: &s}
	case jList:
		return controlv1alpha1.Value{Type: controlv1alpha1.TypeArray, Array: &apiextensionsv1.JSON{Raw: v.appendJSON(nil)}}
	case jMap:
		return controlv1alpha1.Value{Type: controlv1alpha1.TypeObject, Object: &apiextensionsv1.JSON{Raw: v.appendJSON(nil)}}
	}
	return nullValue()
}

// appendJSON appends v as compact JSON, keys sorted, strings escaped as encoding/json escapes them
// (as the apiserver writes them back). A list or map never holds a NaN or an infinity (fromCEL
// and fromNative reject them), so every number is a valid JSON number.
func (v *jvalue) appendJSON(buf []byte) []byte {
	switch v.kind {
	case jNull:
		return append(buf, "null"...)
	case jBool:
		return strconv.AppendBool(buf, v.b)
	case jNumber:
		return append(buf, v.n.text()...)
	case jString:
		return appendJSONString(buf, v.s)
	case jList:
		buf = append(buf, '[')
		for i := range v.c.vals {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = v.c.vals[i].appendJSON(buf)
		}
		return append(buf, ']')
	}
	buf = append(buf, '{')
	for i, k := range v.c.keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, k)
		buf = append(buf, ':')
		buf = v.c.vals[i].appendJSON(buf)
	}
	return append(buf, '}')
}

func appendJSONString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(buf, b...)
}

func nullValue() controlv1alpha1.Value { return controlv1alpha1.Value{Type: controlv1alpha1.TypeNull} }

func numberValue(n number) controlv1alpha1.Value {
	s := n.text()
	return controlv1alpha1.Value{Type: controlv1alpha1.TypeNumber, Number: &s}
}
