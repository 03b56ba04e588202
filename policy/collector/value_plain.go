package collector

import (
	"bytes"
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// PlainValue turns a CombinedStatus value back into plain JSON data (nil, bool, string,
// json.Number, []any, map[string]any), e.g. for printing. A Number keeps its exact text; NaN and
// the infinities, which JSON cannot hold, become the strings "NaN", "+Inf" and "-Inf". An Object or
// Array whose JSON does not decode is returned as its raw text.
func PlainValue(v controlv1alpha1.Value) any {
	switch v.Type {
	case controlv1alpha1.TypeString:
		if v.String != nil {
			return *v.String
		}
	case controlv1alpha1.TypeNumber:
		if v.Number == nil {
			return nil
		}
		if n, ok := parseNumericString(*v.Number); ok && n.rank() == 1 {
			return json.Number(*v.Number)
		}
		return *v.Number
	case controlv1alpha1.TypeBool:
		if v.Bool != nil {
			return *v.Bool
		}
	case controlv1alpha1.TypeArray:
		return plainJSON(v.Array)
	case controlv1alpha1.TypeObject:
		return plainJSON(v.Object)
	}
	return nil
}

func plainJSON(j *apiextensionsv1.JSON) any {
	if j == nil || len(j.Raw) == 0 {
		return nil
	}
	var out any
	dec := json.NewDecoder(bytes.NewReader(j.Raw))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return string(j.Raw)
	}
	return out
}
