package wecsim

import (
	"fmt"
	"math/rand/v2"
)

// Role is what a simulated WEC does differently from a healthy one.
type Role string

const (
	// RoleHealthy rolls out at its own speed and succeeds.
	RoleHealthy Role = "healthy"
	// RoleLagging receives every new generation of a workload object LagTicks late.
	RoleLagging Role = "lagging"
	// RoleFailing never finishes a Deployment rollout (ProgressDeadlineExceeded after
	// DeadlineTicks) and fails every Job (BackoffLimitExceeded).
	RoleFailing Role = "failing"
	// RoleJoining is registered only from its JoinTick on.
	RoleJoining Role = "joining"
	// RoleLeaving is deregistered, and its WorkStatuses deleted, at its LeaveTick.
	RoleLeaving Role = "leaving"
)

// Label keys the simulated inventory objects carry.
const (
	LabelLocationGroup = "location-group"
	LabelName          = "name"
	LabelRegion        = "region"
	LabelSimulated     = "statusfold.io/simulated"
)

// Regions are assigned to WECs round-robin.
var Regions = []string{"us-east", "eu-west", "ap-south"}

// WEC is one simulated workload execution cluster.
type WEC struct {
	Name   string
	Labels map[string]string
	Role   Role
	// Speed is how many replicas (or Job completions) the WEC makes ready per tick, 1–3.
	Speed int
	// JoinTick is the first tick at which the WEC is registered (0 for all but RoleJoining).
	JoinTick int
	// LeaveTick is the tick at which a RoleLeaving WEC is deregistered; -1 for the others.
	LeaveTick int
}

// Present reports whether the WEC is registered at tick.
func (w WEC) Present(tick int) bool {
	return tick >= w.JoinTick && (w.LeaveTick < 0 || tick < w.LeaveTick)
}

// Scenario is the deterministic plan of a simulation.
type Scenario struct {
	Seed int64
	WECs []WEC
	// LagTicks is how many ticks a lagging WEC receives new generations late.
	LagTicks int
	// DeadlineTicks is how many ticks a failing WEC's Deployment rollout takes to hit its
	// progress deadline.
	DeadlineTicks int
}

// NewScenario plans n WECs named wec1…wecN. All carry the labels location-group=edge,
// name=<WEC name>, region=<round-robin over Regions> and statusfold.io/simulated=true. The seed
// picks each WEC's speed and which WECs lag, fail, join late and leave (in that order of
// preference, as far as n allows: with n ≥ 4 there is one of each).
func NewScenario(seed int64, n int) Scenario {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	sc := Scenario{Seed: seed, LagTicks: 4, DeadlineTicks: 6}
	for i := range n {
		name := fmt.Sprintf("wec%d", i+1)
		sc.WECs = append(sc.WECs, WEC{
			Name: name,
			Labels: map[string]string{
				LabelLocationGroup: "edge",
				LabelName:          name,
				LabelRegion:        Regions[i%len(Regions)],
				LabelSimulated:     "true",
			},
			Role:      RoleHealthy,
			Speed:     1 + rng.IntN(3),
			LeaveTick: -1,
		})
	}
	perm := rng.Perm(n)
	roles := []Role{RoleLagging, RoleFailing, RoleJoining, RoleLeaving}
	for i, idx := range perm {
		if i >= len(roles) {
			break
		}
		w := &sc.WECs[idx]
		w.Role = roles[i]
		switch w.Role {
		case RoleJoining:
			w.JoinTick = 3 + rng.IntN(3)
		case RoleLeaving:
			w.LeaveTick = 8 + rng.IntN(3)
		}
	}
	return sc
}
