package wecsim

import (
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

func at(tick int) time.Time { return t0.Add(time.Duration(tick) * time.Second) }

func ts(tick int) string { return at(tick).Format(time.RFC3339) }

func wec(name string, role Role, speed int) WEC {
	return WEC{Name: name, Role: role, Speed: speed, LeaveTick: -1, Labels: map[string]string{LabelName: name}}
}

func testScenario(wecs ...WEC) Scenario {
	return Scenario{Seed: 7, WECs: wecs, LagTicks: 2, DeadlineTicks: 3}
}

func deployment(gen, replicas int64) Object {
	return Object{
		Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespace: "demo", Name: "nginx",
		Generation: gen,
		Content:    map[string]any{"spec": map[string]any{"replicas": replicas}},
	}
}

func job(completions, backoff int64) Object {
	return Object{
		Group: "batch", Version: "v1", Resource: "jobs", Kind: "Job", Namespace: "demo", Name: "pi", Generation: 1,
		Content: map[string]any{"spec": map[string]any{"completions": completions, "backoffLimit": backoff}},
	}
}

func TestNewScenarioIsDeterministic(t *testing.T) {
	type want struct {
		name, region string
		role         Role
		speed        int
		join, leave  int
	}
	cases := []struct {
		seed int64
		n    int
		want []want
	}{
		{seed: 1, n: 5, want: []want{
			{"wec1", "us-east", RoleLagging, 1, 0, -1},
			{"wec2", "eu-west", RoleJoining, 1, 3, -1},
			{"wec3", "ap-south", RoleLeaving, 3, 0, 8},
			{"wec4", "us-east", RoleHealthy, 1, 0, -1},
			{"wec5", "eu-west", RoleFailing, 3, 0, -1},
		}},
		{seed: 2, n: 5, want: []want{
			{"wec1", "us-east", RoleJoining, 2, 3, -1},
			{"wec2", "eu-west", RoleHealthy, 3, 0, -1},
			{"wec3", "ap-south", RoleLeaving, 1, 0, 8},
			{"wec4", "us-east", RoleLagging, 2, 0, -1},
			{"wec5", "eu-west", RoleFailing, 3, 0, -1},
		}},
	}
	for _, tc := range cases {
		sc := NewScenario(tc.seed, tc.n)
		if again := NewScenario(tc.seed, tc.n); !reflect.DeepEqual(sc, again) {
			t.Errorf("seed %d: two scenarios differ:\n%+v\n%+v", tc.seed, sc, again)
		}
		if len(sc.WECs) != len(tc.want) {
			t.Fatalf("seed %d: %d WECs, want %d", tc.seed, len(sc.WECs), len(tc.want))
		}
		for i, w := range tc.want {
			got := sc.WECs[i]
			gw := want{got.Name, got.Labels[LabelRegion], got.Role, got.Speed, got.JoinTick, got.LeaveTick}
			if gw != w {
				t.Errorf("seed %d WEC %d: got %+v, want %+v", tc.seed, i, gw, w)
			}
			wantLabels := map[string]string{LabelLocationGroup: "edge", LabelName: w.name, LabelRegion: w.region, LabelSimulated: "true"}
			if !reflect.DeepEqual(got.Labels, wantLabels) {
				t.Errorf("seed %d %s: labels %v, want %v", tc.seed, w.name, got.Labels, wantLabels)
			}
		}
	}
}

func TestNewScenarioRolesFollowN(t *testing.T) {
	cases := []struct {
		n     int
		roles map[Role]int
	}{
		{1, map[Role]int{RoleLagging: 1}},
		{2, map[Role]int{RoleLagging: 1, RoleFailing: 1}},
		{4, map[Role]int{RoleLagging: 1, RoleFailing: 1, RoleJoining: 1, RoleLeaving: 1}},
		{7, map[Role]int{RoleLagging: 1, RoleFailing: 1, RoleJoining: 1, RoleLeaving: 1, RoleHealthy: 3}},
	}
	for _, tc := range cases {
		got := map[Role]int{}
		for _, w := range NewScenario(3, tc.n).WECs {
			got[w.Role]++
		}
		if !reflect.DeepEqual(got, tc.roles) {
			t.Errorf("n=%d: roles %v, want %v", tc.n, got, tc.roles)
		}
	}
}

func TestWECPresent(t *testing.T) {
	cases := []struct {
		name string
		w    WEC
		tick int
		want bool
	}{
		{"always there", WEC{LeaveTick: -1}, 100, true},
		{"before join", WEC{JoinTick: 3, LeaveTick: -1}, 2, false},
		{"at join", WEC{JoinTick: 3, LeaveTick: -1}, 3, true},
		{"before leave", WEC{LeaveTick: 8}, 7, true},
		{"at leave", WEC{LeaveTick: 8}, 8, false},
	}
	for _, tc := range cases {
		if got := tc.w.Present(tc.tick); got != tc.want {
			t.Errorf("%s: Present(%d) = %v, want %v", tc.name, tc.tick, got, tc.want)
		}
	}
}

func deployCond(typ, status, reason, message string, transition, update int) map[string]any {
	return map[string]any{
		"type": typ, "status": status, "reason": reason, "message": message,
		"lastTransitionTime": ts(transition), "lastUpdateTime": ts(update),
	}
}

func TestDeploymentRollout(t *testing.T) {
	rs := replicaSetName("nginx", 1)
	progressing := func(from, upd int) map[string]any {
		return deployCond("Progressing", "True", "ReplicaSetUpdated", `ReplicaSet "`+rs+`" is progressing.`, from, upd)
	}
	unavailable := deployCond("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", 0, 0)
	cases := []struct {
		name string
		wec  WEC
		tick int
		want map[string]any
	}{
		{"healthy, tick 0: nothing ready", wec("a", RoleHealthy, 2), 0, map[string]any{
			"observedGeneration": int64(1), "replicas": int64(4), "unavailableReplicas": int64(4),
			"conditions": []any{unavailable, progressing(0, 0)},
		}},
		{"healthy, tick 1: 2 of 4 ready", wec("a", RoleHealthy, 2), 1, map[string]any{
			"observedGeneration": int64(1), "replicas": int64(4), "updatedReplicas": int64(2),
			"readyReplicas": int64(2), "availableReplicas": int64(2), "unavailableReplicas": int64(2),
			"conditions": []any{unavailable, progressing(0, 0)},
		}},
		{"healthy, tick 2: done", wec("a", RoleHealthy, 2), 2, map[string]any{
			"observedGeneration": int64(1), "replicas": int64(4), "updatedReplicas": int64(4),
			"readyReplicas": int64(4), "availableReplicas": int64(4),
			"conditions": []any{
				deployCond("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", 2, 2),
				deployCond("Progressing", "True", "NewReplicaSetAvailable", `ReplicaSet "`+rs+`" has successfully progressed.`, 0, 2),
			},
		}},
		{"failing, tick 2: stuck at half", wec("f", RoleFailing, 3), 2, map[string]any{
			"observedGeneration": int64(1), "replicas": int64(4), "updatedReplicas": int64(2),
			"readyReplicas": int64(2), "availableReplicas": int64(2), "unavailableReplicas": int64(2),
			"conditions": []any{unavailable, progressing(0, 0)},
		}},
		{"failing, tick 3: deadline exceeded", wec("f", RoleFailing, 3), 3, map[string]any{
			"observedGeneration": int64(1), "replicas": int64(4), "updatedReplicas": int64(2),
			"readyReplicas": int64(2), "availableReplicas": int64(2), "unavailableReplicas": int64(2),
			"conditions": []any{unavailable, deployCond("Progressing", "False", "ProgressDeadlineExceeded",
				`ReplicaSet "`+rs+`" has timed out progressing.`, 3, 3)},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim := NewSimulator(testScenario(tc.wec))
			var rep Report
			var ok bool
			for tick := 0; tick <= tc.tick; tick++ {
				rep, ok = sim.Observe(deployment(1, 4), tc.wec.Name, tick, at(tick))
			}
			if !ok {
				t.Fatal("no report")
			}
			want := Report{Status: tc.want, LastGeneration: 1, LastGenerationIsApplied: true, WECGeneration: 1}
			if !reflect.DeepEqual(rep, want) {
				t.Errorf("got  %#v\nwant %#v", rep, want)
			}
		})
	}
}

func TestLaggingWECReceivesGenerationsLate(t *testing.T) {
	// Generation 1 from tick 0, generation 2 from tick 5; LagTicks is 2.
	type step struct {
		reported      bool
		lastGen       int64
		wecGen        int64
		observedGen   int64
		updatedReplic int64
	}
	want := map[int]step{
		0: {}, 1: {},
		2: {true, 1, 1, 1, 0},
		3: {true, 1, 1, 1, 1},
		5: {true, 1, 1, 1, 1},
		6: {true, 1, 1, 1, 1},
		7: {true, 2, 2, 2, 0},
		8: {true, 2, 2, 2, 1},
	}
	sim := NewSimulator(testScenario(wec("lag", RoleLagging, 1)))
	for tick := 0; tick <= 8; tick++ {
		gen := int64(1)
		if tick >= 5 {
			gen = 2
		}
		rep, ok := sim.Observe(deployment(gen, 1), "lag", tick, at(tick))
		w, check := want[tick]
		if !check {
			continue
		}
		got := step{reported: ok}
		if ok {
			got.lastGen, got.wecGen = rep.LastGeneration, rep.WECGeneration
			got.observedGen = rep.Status["observedGeneration"].(int64)
			if v, has := rep.Status["updatedReplicas"]; has {
				got.updatedReplic = v.(int64)
			}
		}
		if got != w {
			t.Errorf("tick %d: got %+v, want %+v", tick, got, w)
		}
	}
}

func TestJob(t *testing.T) {
	done := map[string]any{
		"type": "Complete", "status": "True", "reason": "CompletionsReached",
		"message": "Reached expected number of succeeded pods", "lastTransitionTime": ts(2), "lastProbeTime": ts(2),
	}
	met := map[string]any{
		"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached",
		"message": "Reached expected number of succeeded pods", "lastTransitionTime": ts(2), "lastProbeTime": ts(2),
	}
	failedCond := func(typ string) map[string]any {
		return map[string]any{
			"type": typ, "status": "True", "reason": "BackoffLimitExceeded",
			"message": "Job has reached the specified backoff limit", "lastTransitionTime": ts(3), "lastProbeTime": ts(3),
		}
	}
	cases := []struct {
		name string
		wec  WEC
		tick int
		want map[string]any
	}{
		{"healthy, tick 1: 2 of 3 succeeded", wec("a", RoleHealthy, 2), 1, map[string]any{
			"startTime": ts(0), "active": int64(1), "ready": int64(1), "succeeded": int64(2),
			"terminating": int64(0), "uncountedTerminatedPods": map[string]any{},
		}},
		{"healthy, tick 4: complete since tick 2", wec("a", RoleHealthy, 2), 4, map[string]any{
			"startTime": ts(0), "completionTime": ts(2), "ready": int64(0), "succeeded": int64(3),
			"terminating": int64(0), "uncountedTerminatedPods": map[string]any{},
			"conditions": []any{met, done},
		}},
		{"failing, tick 2: retrying", wec("f", RoleFailing, 2), 2, map[string]any{
			"startTime": ts(0), "active": int64(1), "ready": int64(1), "failed": int64(2),
			"terminating": int64(0), "uncountedTerminatedPods": map[string]any{},
		}},
		{"failing, tick 3: backoff limit 2 exceeded", wec("f", RoleFailing, 2), 3, map[string]any{
			"startTime": ts(0), "ready": int64(0), "failed": int64(3),
			"terminating": int64(0), "uncountedTerminatedPods": map[string]any{},
			"conditions": []any{failedCond("FailureTarget"), failedCond("Failed")},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sim := NewSimulator(testScenario(tc.wec))
			var rep Report
			for tick := 0; tick <= tc.tick; tick++ {
				rep, _ = sim.Observe(job(3, 2), tc.wec.Name, tick, at(tick))
			}
			if !reflect.DeepEqual(rep.Status, tc.want) {
				t.Errorf("got  %#v\nwant %#v", rep.Status, tc.want)
			}
		})
	}
}

func TestObserveReportsNothing(t *testing.T) {
	cm := Object{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespace: "demo", Name: "c", Generation: 1}
	cases := []struct {
		name string
		obj  Object
		wec  string
	}{
		{"kind not simulated", cm, "a"},
		{"WEC not in the scenario", deployment(1, 1), "nope"},
	}
	for _, tc := range cases {
		sim := NewSimulator(testScenario(wec("a", RoleHealthy, 1)))
		if rep, ok := sim.Observe(tc.obj, tc.wec, 0, at(0)); ok {
			t.Errorf("%s: got a report %+v", tc.name, rep)
		}
	}
}

func TestWorkStatusName(t *testing.T) {
	cases := []struct {
		group, version, kind, ns, name string
		want                           string
	}{
		{"apps", "v1", "Deployment", "nginx", "nginx-deployment", "appsv1-deployment-nginx-nginx-deployment"},
		{"", "v1", "Pod", "demo", "p", "v1-pod-demo-p"},
		{"networking.k8s.io", "v1", "Ingress", "demo", "web", "networkingk8siov1-ingress-demo-web"},
		{"rbac.authorization.k8s.io", "v1", "ClusterRole", "", "viewer", "rbacauthorizationk8siov1-clusterrole-viewer"},
	}
	for _, tc := range cases {
		if got := WorkStatusName(tc.group, tc.version, tc.kind, tc.ns, tc.name); got != tc.want {
			t.Errorf("WorkStatusName(%q,%q,%q,%q,%q) = %q, want %q", tc.group, tc.version, tc.kind, tc.ns, tc.name, got, tc.want)
		}
	}
}
