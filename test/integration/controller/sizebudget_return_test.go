package controller

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/statusfold/statusfold/aggregator"
	"github.com/statusfold/statusfold/policy/sizebudget"
	"github.com/statusfold/statusfold/test/framework"
)

// returnBudget is the budget of the returned status scenarios: small, so that statuses of
// ≈100 KB are over it.
const returnBudget = 64 << 10

// itemsStatus is a Widget status with n list entries of about 500 bytes: about n/2 KB.
func itemsStatus(n int) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"name": fmt.Sprintf("item%04d", i), "detail": strings.Repeat("d", 480)}
	}
	return map[string]any{"phase": "Ready", "items": items}
}

// testReturnOverBudget: a singleton return and a multi-WEC return whose status is over the
// budget are written within it with whole list entries, the first ones, and a StatusTrimmed
// condition; a status without a list to cut is replaced by StatusReturned=Unknown; a status
// that fits again is written whole, without the condition.
func testReturnOverBudget(t *testing.T, cp *framework.ControlPlane, c client.Client) {
	const ns = "ret"
	before := counter(t, "statusfold_trimmed_total", "kind", "status")
	_, stop := startManager(t, cp, aggregator.Options{SizeBudget: returnBudget})
	defer stop()
	one := customObject(t, c, widgetGVK, ns, "one")
	many := customObject(t, c, widgetGVK, ns, "many")
	blob := customObject(t, c, widgetGVK, ns, "blob")
	create(t, c,
		policy("ret-one", []string{fleetName(0)}, clause("example.com", "widgets", ns, []string{"one", "blob"}, singleton)),
		policy("ret-many", []string{fleetName(0), fleetName(1), fleetName(2)}, clause("example.com", "widgets", ns, []string{"many"}, multi)))
	report(t, c, fleetName(0), customRef(widgetGVK, "widgets", one), itemsStatus(200), applied(1))
	for i := range 3 {
		report(t, c, fleetName(i), customRef(widgetGVK, "widgets", many), itemsStatus(200), applied(1))
	}
	report(t, c, fleetName(0), customRef(widgetGVK, "widgets", blob),
		map[string]any{"phase": "Ready", "blob": strings.Repeat("b", 100<<10)}, applied(1))

	for _, name := range []string{"one", "many"} {
		expectObject(t, c, ns, name, func(u *unstructured.Unstructured) error {
			items, _, _ := unstructured.NestedSlice(u.Object, "status", "items")
			if err := checkPrefix(items, 200); err != nil {
				return err
			}
			if len(items) == 200 {
				return fmt.Errorf("every item kept")
			}
			if c := conditionOf(u, sizebudget.ConditionTrimmed); c == nil || c["status"] != "True" ||
				!strings.Contains(fmt.Sprint(c["message"]), fmt.Sprintf("left out %d entries of .status.items", 200-len(items))) {
				return fmt.Errorf("StatusTrimmed condition %v for %d items kept", c, len(items))
			}
			return withinBudget(u)
		})
	}
	expectObject(t, c, ns, "blob", func(u *unstructured.Unstructured) error {
		status, _, _ := unstructured.NestedMap(u.Object, "status")
		if c := conditionOf(u, sizebudget.ConditionReturned); c == nil || c["status"] != "Unknown" || len(status) != 1 {
			return fmt.Errorf("status %.200v: want only StatusReturned=Unknown", status)
		}
		return withinBudget(u)
	})
	expectEvent(t, c, ns, "one", "OverSizeBudget", "status trimmed")
	if after := counter(t, "statusfold_trimmed_total", "kind", "status"); after < before+3 {
		t.Errorf("statusfold_trimmed_total{kind=status} went from %v to %v, want at least +3", before, after)
	}

	reportStatus(t, c, fleetName(0), customRef(widgetGVK, "widgets", one), itemsStatus(20))
	expectObject(t, c, ns, "one", func(u *unstructured.Unstructured) error {
		items, _, _ := unstructured.NestedSlice(u.Object, "status", "items")
		if len(items) != 20 || conditionOf(u, sizebudget.ConditionTrimmed) != nil {
			return fmt.Errorf("%d items, conditions %v: want 20 items and no StatusTrimmed", len(items), u.Object["status"].(map[string]any)["conditions"])
		}
		return nil
	})
}

// expectObject waits until the Widget ns/name satisfies check.
func expectObject(t *testing.T, c client.Client, ns, name string, check func(u *unstructured.Unstructured) error) {
	t.Helper()
	eventually(t, fmt.Sprintf("Widget %s/%s", ns, name), func() error {
		u, err := getObject(c, widgetObject(), ns, name)
		if err != nil {
			return err
		}
		return check(u)
	})
}

func widgetObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVK)
	return u
}

// checkPrefix checks that items are the first entries of itemsStatus(n), whole, and at least one.
func checkPrefix(items []any, n int) error {
	want := itemsStatus(n)["items"].([]any)
	if len(items) == 0 || len(items) > n {
		return fmt.Errorf("%d items of %d", len(items), n)
	}
	for i, it := range items {
		if fmt.Sprint(it) != fmt.Sprint(want[i]) {
			return fmt.Errorf("item %d is not whole or not in order: %.80v", i, it)
		}
	}
	return nil
}

func conditionOf(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ && m["reason"] == sizebudget.ReasonOverBudget {
			return m
		}
	}
	return nil
}

// withinBudget checks the object's encoded size, without managed fields, against the budget.
func withinBudget(u *unstructured.Unstructured) error {
	u = u.DeepCopy()
	u.SetManagedFields(nil)
	if n := sizebudget.EncodedSize(u.Object); n > returnBudget {
		return fmt.Errorf("object of %d bytes over budget %d", n, returnBudget)
	}
	return nil
}
