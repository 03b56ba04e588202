package controller

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/test/framework"
)

// patchLog records the query of every PATCH request whose path contains one of the given
// resources' segments.
type patchLog struct {
	mu      sync.Mutex
	queries map[string][]string // resource → raw queries
}

func (l *patchLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPatch {
			for _, res := range []string{"combinedstatuses", "deployments"} {
				if strings.Contains(r.URL.Path, "/"+res+"/") {
					l.mu.Lock()
					l.queries[res] = append(l.queries[res], r.URL.RawQuery)
					l.mu.Unlock()
				}
			}
		}
		return rt.RoundTrip(r)
	})
}

func (l *patchLog) get(res string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.queries[res]...)
}

// TestCombinedStatusApplyIgnoresFieldValidation: statusfold's CombinedStatus applies are sent
// with fieldValidation=Ignore (they are pruned to the served schema first: docs/performance.md,
// "Writing cheaper"), with the pacer on (the default) an update is still reflected at once, and
// the returned status of a workload object is applied with the apiserver's default validation.
func TestCombinedStatusApplyIgnoresFieldValidation(t *testing.T) {
	cp := framework.RunControlPlane(t)
	c := cp.Client
	for _, w := range []string{"wec1", "wec2"} {
		addCluster(t, c, w, map[string]string{"name": w})
	}
	ns := "field-validation"
	d := deployment(t, c, ns, "web", 3, nil)
	create(t, c,
		&controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: "fv-phase"}, Spec: controlv1alpha1.StatusCollectorSpec{Limit: 20,
			Select: []controlv1alpha1.NamedExpression{{Name: "phase", Def: "returned.status.phase"}}}},
		policy("fv", []string{"wec1"}, clause("apps", "deployments", ns, []string{"web"}, singleton, collectors("fv-phase"))),
	)
	report(t, c, "wec1", deploymentRef(d), map[string]any{"phase": "Running"}, applied(d.Generation))
	log := &patchLog{queries: map[string][]string{}}
	cfg := rest.CopyConfig(cp.Config)
	cfg.WrapTransport = log.wrap
	startLoggedManager(t, cp, cfg, aggregator.Options{})

	expectResult(t, c, d, "fv", ns, "fv-phase", [][]string{{"Running"}})
	start := time.Now()
	report(t, c, "wec1", deploymentRef(d), map[string]any{"phase": "Failed"}, applied(d.Generation))
	expectResult(t, c, d, "fv", ns, "fv-phase", [][]string{{"Failed"}})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("second update reflected after %s", took)
	}
	qs := log.get("combinedstatuses")
	if len(qs) < 2 {
		t.Fatalf("%d CombinedStatus PATCH requests, want at least 2 (one per update)", len(qs))
	}
	for _, q := range qs {
		if !strings.Contains(q, "fieldValidation=Ignore") || !strings.Contains(q, "fieldManager="+aggregator.FieldManager) ||
			!strings.Contains(q, "force=true") {
			t.Errorf("CombinedStatus PATCH with query %q, want fieldValidation=Ignore, fieldManager=%s and force=true", q, aggregator.FieldManager)
		}
	}
	eventually(t, "the returned status applied", func() error {
		if len(log.get("deployments")) == 0 {
			return fmt.Errorf("no Deployment PATCH yet")
		}
		return nil
	})
	for _, q := range log.get("deployments") {
		if strings.Contains(q, "fieldValidation") {
			t.Errorf("Deployment PATCH with query %q: want the apiserver's default field validation", q)
		}
	}
}
