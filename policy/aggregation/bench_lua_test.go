package aggregation

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/statusfold/statusfold/policy/luahealth"
)

// Benchmarks of a Lua-judged kind (Argo Rollouts' Rollout, Argo CD's own script) beside the
// Deployment's, in one run: a one-WEC change at 1,000 WECs, a cold evaluation at 1,000 WECs, and
// one call of the script (median and p99 reported as metrics). The Rollout statuses are Argo CD's
// fixtures: every WEC healthy, the changed WEC alternating between healthy and degraded.

var gkRollout = schema.GroupKind{Group: "argoproj.io", Kind: "Rollout"}

// rolloutFixtures returns the WDS object and a healthy and a degraded Rollout status.
func rolloutFixtures(b *testing.B) (obj map[string]any, healthy, degraded map[string]any) {
	fxs, err := luahealth.ArgoCDFixtures()
	if err != nil {
		b.Fatal(err)
	}
	for _, fx := range fxs {
		switch fx.Dir + "/" + fx.Path {
		case "argoproj.io/Rollout/testdata/healthy_newWorkloadGeneration.yaml":
			obj = fx.Object
			healthy = NormalizeNumbers(fx.Object["status"]).(map[string]any)
		case "argoproj.io/Rollout/testdata/degraded_rolloutTimeout.yaml":
			degraded = NormalizeNumbers(fx.Object["status"]).(map[string]any)
		}
	}
	if obj == nil || degraded == nil {
		b.Fatal("Rollout fixtures not found")
	}
	return obj, healthy, degraded
}

func luaOption(b *testing.B) Option {
	c, err := luahealth.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	return WithLuaChecks(c)
}

func BenchmarkLuaVsDeployment(b *testing.B) {
	const n = 1000
	obj, healthy, degraded := rolloutFixtures(b)
	rollout := func(i, variant int) map[string]any {
		if variant == 1 {
			return degraded
		}
		return healthy
	}
	gen := objectGeneration(obj)
	rolloutWECs := benchWECs(n, rollout)
	for i := range rolloutWECs {
		d := *rolloutWECs[i].Details
		d.LastGeneration = gen
		rolloutWECs[i].Details = &d
	}
	lua := luaOption(b)
	b.Run("one-wec-change/deployment", func(b *testing.B) {
		benchOneChange(b, gkDeployment, benchObj, benchWECs(n, benchDeploymentStatus), benchDeploymentStatus, lua)
	})
	b.Run("one-wec-change/rollout", func(b *testing.B) { benchOneChange(b, gkRollout, obj, rolloutWECs, rollout, lua) })
	b.Run("cold/deployment", func(b *testing.B) { benchCold(b, gkDeployment, benchObj, benchWECs(n, benchDeploymentStatus), lua) })
	b.Run("cold/rollout", func(b *testing.B) { benchCold(b, gkRollout, obj, rolloutWECs, lua) })
}

// BenchmarkLuaCall times single calls of the Rollout script on a WEC's judged object and reports
// their median and 99th percentile.
func BenchmarkLuaCall(b *testing.B) {
	obj, healthy, degraded := rolloutFixtures(b)
	c, err := luahealth.Builtin()
	if err != nil {
		b.Fatal(err)
	}
	script := c.For(gkRollout)
	objs := []map[string]any{JudgedObject(obj, healthy, 1, true), JudgedObject(obj, degraded, 1, true)}
	var times []time.Duration
	i := 0
	loop(b, func() {
		t0 := time.Now()
		if _, err := script.Run(objs[i%2]); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
		i++
	})
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns")
}
