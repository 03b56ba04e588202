package policies

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

// sentWrite is one write the fake apiserver received, with the options it was sent with.
type sentWrite struct {
	verb       string // "apply" (typed Apply) or "patch" (a patch of type apply)
	sub        string // the subresource; "" for the main resource
	patchType  types.PatchType
	manager    string
	validation string
	force      bool
	obj        *unstructured.Unstructured // a copy of what was sent
}

// fakeAPI records the writes made through its client and answers them: with fail's error when
// it returns one, else with success and the next resourceVersion.
type fakeAPI struct {
	mu     sync.Mutex
	writes []sentWrite
	fail   func(w sentWrite) error
}

func (f *fakeAPI) answer(w sentWrite, obj any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, w)
	if f.fail != nil {
		if err := f.fail(w); err != nil {
			return err
		}
	}
	// The answer is a new object, as decoded from the apiserver's response.
	answer := copyOf(obj)
	answer.SetResourceVersion(strconv.Itoa(100 + len(f.writes)))
	obj.(runtime.Unstructured).SetUnstructuredContent(answer.Object)
	return nil
}

func copyOf(obj any) *unstructured.Unstructured {
	return obj.(runtime.Object).DeepCopyObject().(*unstructured.Unstructured)
}

func forced(f *bool) bool { return f != nil && *f }

// client returns a fake client of the WDS holding objs, whose writes go to f.
func (f *fakeAPI) client(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			o := (&client.PatchOptions{}).ApplyOptions(opts)
			return f.answer(sentWrite{verb: "patch", patchType: p.Type(), manager: o.FieldManager, validation: o.FieldValidation,
				force: forced(o.Force), obj: copyOf(obj)}, obj)
		},
		SubResourcePatch: func(_ context.Context, _ client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			o := (&client.SubResourcePatchOptions{}).ApplyOptions(opts)
			return f.answer(sentWrite{verb: "patch", sub: sub, patchType: p.Type(), manager: o.FieldManager, validation: o.FieldValidation,
				force: forced(o.Force), obj: copyOf(obj)}, obj)
		},
		Apply: func(_ context.Context, _ client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			o := (&client.ApplyOptions{}).ApplyOptions(opts)
			return f.answer(sentWrite{verb: "apply", patchType: types.ApplyPatchType, manager: o.FieldManager, force: forced(o.Force), obj: copyOf(obj)}, obj)
		},
		SubResourceApply: func(_ context.Context, _ client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			o := (&client.SubResourceApplyOptions{}).ApplyOpts(opts)
			return f.answer(sentWrite{verb: "apply", sub: sub, patchType: types.ApplyPatchType, manager: o.FieldManager,
				force: forced(o.Force), obj: copyOf(obj)}, obj)
		},
	}).Build()
}

// recorded drains the Events recorded so far.
func recorded(rec *events.FakeRecorder) []string {
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
