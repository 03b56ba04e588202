package resources

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestCatalogUncertainAtStart: when a group's discovery fails at the first refresh (a start, or a
// new leader), the catalog has no earlier view of it: its resources are unknown, a lookup of one
// is uncertain, and Uncertain names the group, so binding resolution keeps the Binding's entries
// for it. When the group answers again, it is no longer uncertain and its recovery is reported.
func TestCatalogUncertainAtStart(t *testing.T) {
	s := newDiscoveryServer(t)
	s.set(true, nil)
	c := newTestCatalog(t, s)
	var recovered []string
	c.OnRecovered = func(g string) { recovered = append(recovered, g) }
	got := c.Resources(false)
	if len(got) != 1 || got[0].GVR.GroupResource() != configmapsGR {
		t.Fatalf("catalog at start with slow.example.com down = %+v, want configmaps only", got)
	}
	if groups, all := c.Uncertain(); !slices.Equal(groups, []string{"slow.example.com"}) || all {
		t.Errorf("Uncertain() = %v, %v; want [slow.example.com], false", groups, all)
	}
	if _, ok := c.Known(widgets); ok {
		t.Errorf("widgets known at start while its group is down")
	}
	c.at = time.Time{}
	if _, ok, err := c.Lookup(widgets); ok || !errors.Is(err, ErrUncertain) {
		t.Errorf("lookup(widgets) at start while its group fails = %v, %v; want uncertain", ok, err)
	}
	s.set(false, nil)
	c.at = time.Time{}
	c.Resources(true)
	if groups, all := c.Uncertain(); groups != nil || all {
		t.Errorf("Uncertain() after the group is back = %v, %v; want none", groups, all)
	}
	if !slices.Equal(recovered, []string{"slow.example.com"}) {
		t.Errorf("recovered = %v, want [slow.example.com]", recovered)
	}
	if _, ok := c.Known(widgets); !ok {
		t.Errorf("widgets unknown after its group is back")
	}
}
