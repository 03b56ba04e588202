package hostile

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	policyv1alpha1 "github.com/statusfold/statusfold/api/policy/v1alpha1"
)

// clusterObject is the case's StatusCollector or AggregationPolicy as it is sent to the
// apiserver: its kind and version set, named e.name.
func (e entryCase) clusterObject() *unstructured.Unstructured {
	obj := map[string]any{}
	for k, v := range e.object {
		obj[k] = v
	}
	md := map[string]any{}
	if m, ok := obj["metadata"].(map[string]any); ok {
		for k, v := range m {
			md[k] = v
		}
	}
	if e.name != "" {
		md["name"] = e.name
	}
	obj["metadata"] = md
	u := &unstructured.Unstructured{Object: obj}
	if e.kind == kindCollector {
		u.SetGroupVersionKind(controlv1alpha1.GroupVersion.WithKind("StatusCollector"))
	} else {
		u.SetGroupVersionKind(policyv1alpha1.GroupVersion.WithKind("AggregationPolicy"))
	}
	return u
}

// admission creates every case's StatusCollector or AggregationPolicy through the apiserver,
// whose validating webhooks are the manager's: each is refused as the corpus says (with the
// expected field and message) or accepted, within twice admissionLimit and without growing the
// manager's memory by more than entryHeap. It returns the names of the cases accepted.
func (e *entryEnv) admission(t *testing.T, cases []entryCase) map[string]bool {
	accepted := map[string]bool{}
	for _, c := range cases {
		if c.object == nil {
			continue
		}
		var refused bool
		var msg string
		d, mem := e.mgr.measured(t, e.baseline, func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := e.cp.Client.Create(ctx, c.clusterObject())
			switch {
			case err == nil:
			case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || apierrors.IsRequestEntityTooLargeError(err):
				refused, msg = true, err.Error()
			default:
				t.Errorf("%s (%s): create: %v", c.Name, c.file, err)
				refused, msg = true, err.Error()
			}
		})
		e.admissionWorst.add(c, refused, d, mem)
		if err := c.checkRefusal(msg, refused); err != nil {
			t.Errorf("%s (%s) at admission: %v", c.Name, c.file, err)
		}
		checkBounds(t, c.Name+" at admission", d, admissionLimit, mem)
		if !refused {
			accepted[c.Name] = true
		}
	}
	if e.admissionWorst.cases < minEntryCases {
		t.Errorf("%d cases at admission, want at least %d", e.admissionWorst.cases, minEntryCases)
	}
	return accepted
}
