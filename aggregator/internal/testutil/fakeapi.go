package testutil

import (
	"context"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/statusfold/statusfold/api/scheme"
)

// SentWrite is one write the fake apiserver received, with the options it was sent with.
type SentWrite struct {
	Verb       string // "apply" (typed Apply) or "patch" (a patch of type apply)
	Sub        string // the subresource; "" for the main resource
	PatchType  types.PatchType
	Manager    string
	Validation string
	Force      bool
	Obj        *unstructured.Unstructured // a copy of what was sent
}

// FakeAPI records the writes made through its client and answers them: with Fail's error when
// it returns one, else with success and the next resourceVersion. Reads go to the objects the
// client was made with.
type FakeAPI struct {
	mu     sync.Mutex
	Writes []SentWrite
	Fail   func(w SentWrite) error
}

func (f *FakeAPI) answer(w SentWrite, obj any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Writes = append(f.Writes, w)
	if f.Fail != nil {
		if err := f.Fail(w); err != nil {
			return err
		}
	}
	// The answer is a new object, as decoded from the apiserver's response.
	answer := copyOf(obj)
	answer.SetResourceVersion(strconv.Itoa(100 + len(f.Writes)))
	obj.(runtime.Unstructured).SetUnstructuredContent(answer.Object)
	return nil
}

func copyOf(obj any) *unstructured.Unstructured {
	return obj.(runtime.Object).DeepCopyObject().(*unstructured.Unstructured)
}

func forced(f *bool) bool { return f != nil && *f }

// Client returns a fake client of the WDS holding objs, whose writes (patches and server-side
// applies, of the main resource or a subresource) go to f.
func (f *FakeAPI) Client(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			o := (&client.PatchOptions{}).ApplyOptions(opts)
			return f.answer(SentWrite{Verb: "patch", PatchType: p.Type(), Manager: o.FieldManager, Validation: o.FieldValidation,
				Force: forced(o.Force), Obj: copyOf(obj)}, obj)
		},
		SubResourcePatch: func(_ context.Context, _ client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			o := (&client.SubResourcePatchOptions{}).ApplyOptions(opts)
			return f.answer(SentWrite{Verb: "patch", Sub: sub, PatchType: p.Type(), Manager: o.FieldManager, Validation: o.FieldValidation,
				Force: forced(o.Force), Obj: copyOf(obj)}, obj)
		},
		Apply: func(_ context.Context, _ client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			o := (&client.ApplyOptions{}).ApplyOptions(opts)
			return f.answer(SentWrite{Verb: "apply", PatchType: types.ApplyPatchType, Manager: o.FieldManager, Force: forced(o.Force), Obj: copyOf(obj)}, obj)
		},
		SubResourceApply: func(_ context.Context, _ client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			o := (&client.SubResourceApplyOptions{}).ApplyOpts(opts)
			return f.answer(SentWrite{Verb: "apply", Sub: sub, PatchType: types.ApplyPatchType, Manager: o.FieldManager,
				Force: forced(o.Force), Obj: copyOf(obj)}, obj)
		},
	}).Build()
}

// Recorded drains the Events recorded so far.
func Recorded(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
