package classifier

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FuzzValidate checks that any name and pointer tokens give field errors, never a panic, and that
// a name ParseName accepts round-trips through its parts.
func FuzzValidate(f *testing.F) {
	f.Add("jobs.v1.batch", "status", "ready")
	f.Add("pods.v1", "", "")
	f.Add("..", "status", "")
	f.Add("a.v1beta1.b.c", "spec", "x/y~z")
	f.Fuzz(func(t *testing.T, name, t1, t2 string) {
		cc := newClassifier(name, desired(ptr(t1, t2), ptr(t2)), dontPropagate(ptr(t1), ptr(t1, t2), ptr()))
		for _, e := range Validate(cc) {
			if e.Field == "" || e.Error() == "" {
				t.Fatalf("error without path or text: %#v", e)
			}
		}
		gvr, errs := ParseName(name, field.NewPath("metadata", "name"))
		if len(errs) == 0 {
			back := gvr.Resource + "." + gvr.Version
			if gvr.Group != "" {
				back += "." + gvr.Group
			}
			if back != name {
				t.Fatalf("ParseName(%q) = %v, which names %q", name, gvr, back)
			}
		}
	})
}
