package luahealth

import (
	"io/fs"
	"testing"
)

// TestArgoCDFixtures runs every built-in script on its own fixtures: the environment given here is
// the one the scripts are written for, so each gives the verdict and message Argo CD's tests expect.
func TestArgoCDFixtures(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := ArgoCDFixtures()
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, fx := range fixtures {
		dirs[fx.Dir] = true
		// As in Argo CD's own test, the script is the one the object's kind finds.
		got, ok, err := c.Health(GroupKindOf(fx.Object), fx.Object)
		switch {
		case !ok:
			t.Errorf("%s %s: no script for %v", fx.Dir, fx.Path, GroupKindOf(fx.Object))
		case err != nil:
			t.Errorf("%s %s: %v", fx.Dir, fx.Path, err)
		case got != fx.Want:
			t.Errorf("%s %s: got %+v, want %+v", fx.Dir, fx.Path, got, fx.Want)
		}
	}
	scripts, _ := fs.Glob(ArgoCDFS(), "*/*/health.lua")
	t.Logf("%d scripts, %d with fixtures, %d fixtures", len(scripts), len(dirs), len(fixtures))
	if len(scripts) < 200 || len(dirs) != len(scripts) {
		t.Errorf("%d scripts, %d with fixtures", len(scripts), len(dirs))
	}
}
