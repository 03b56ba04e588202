package check

import (
	"context"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// Builders, in the style of cert-manager's test/unit/gen.

type scOpt func(*controlv1alpha1.StatusCollector)

func collectorObj(name string, opts ...scOpt) *controlv1alpha1.StatusCollector {
	sc := &controlv1alpha1.StatusCollector{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(sc)
	}
	return sc
}

func filter(expr string) scOpt {
	return func(sc *controlv1alpha1.StatusCollector) { e := controlv1alpha1.Expression(expr); sc.Spec.Filter = &e }
}

func sel(name, expr string) scOpt {
	return func(sc *controlv1alpha1.StatusCollector) {
		sc.Spec.Select = append(sc.Spec.Select, controlv1alpha1.NamedExpression{Name: name, Def: controlv1alpha1.Expression(expr)})
	}
}

func agg(name string, typ controlv1alpha1.AggregatorType, subject string) scOpt {
	return func(sc *controlv1alpha1.StatusCollector) {
		na := controlv1alpha1.NamedAggregator{Name: name, Type: typ}
		if subject != "" {
			e := controlv1alpha1.Expression(subject)
			na.Subject = &e
		}
		sc.Spec.CombinedFields = append(sc.Spec.CombinedFields, na)
	}
}

type clauseOpt func(*controlv1alpha1.DownsyncPolicyClause)

func policy(name string, clauses ...controlv1alpha1.DownsyncPolicyClause) *controlv1alpha1.BindingPolicy {
	return &controlv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: controlv1alpha1.BindingPolicySpec{
		ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"location-group": "edge"}}},
		Downsync:         clauses,
	}}
}

func clause(opts ...clauseOpt) controlv1alpha1.DownsyncPolicyClause {
	var c controlv1alpha1.DownsyncPolicyClause
	for _, o := range opts {
		o(&c)
	}
	return c
}

func group(g string) clauseOpt {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.APIGroup = ptr.To(g) }
}
func res(r ...string) clauseOpt {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.Resources = r }
}
func uses(n ...string) clauseOpt {
	return func(c *controlv1alpha1.DownsyncPolicyClause) { c.StatusCollectors = n }
}

// collectorMap is a CollectorGetter over a fixed set.
func collectorMap(scs ...*controlv1alpha1.StatusCollector) CollectorGetter {
	m := map[string]*controlv1alpha1.StatusCollector{}
	for _, sc := range scs {
		m[sc.Name] = sc
	}
	return CollectorGetterFunc(func(_ context.Context, name string) (*controlv1alpha1.StatusCollector, error) {
		if sc, ok := m[name]; ok {
			return sc, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "control.kubestellar.io", Resource: "statuscollectors"}, name)
	})
}

type ptrs []controlv1alpha1.JSONPointer

func cc(name string, desired, dont ptrs) *controlv1alpha1.ContentClassifier {
	return &controlv1alpha1.ContentClassifier{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: controlv1alpha1.ContentClassifierSpec{DesiredStatePointers: desired, DontPropagatePointers: dont}}
}

var (
	schemasOnce sync.Once
	schemas     *OfflineSchemas
	schemasErr  error
)

func testSchemas(t testing.TB) *OfflineSchemas {
	t.Helper()
	schemasOnce.Do(func() { schemas, schemasErr = LoadSchemas("testdata") })
	if schemasErr != nil {
		t.Fatal(schemasErr)
	}
	return schemas
}

func newChecker(t testing.TB, getter CollectorGetter) *Checker {
	t.Helper()
	s := testSchemas(t)
	c, err := New(Options{Collectors: getter, Mapper: s, Schemas: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
