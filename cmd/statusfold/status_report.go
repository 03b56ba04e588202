package main

import (
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/policy/health"
)

// statusReport is what `statusfold status` shows, also its -o yaml|json output.
type statusReport struct {
	Object struct {
		Group      string `json:"group"`
		Version    string `json:"version"`
		Kind       string `json:"kind"`
		Resource   string `json:"resource"`
		Namespace  string `json:"namespace,omitempty"`
		Name       string `json:"name"`
		Generation int64  `json:"generation"`
	} `json:"object"`
	// ExecutingCount is the label kubestellar.io/executing-count ("" when absent: no return requested).
	ExecutingCount string `json:"executingCount,omitempty"`
	// Health is Argo CD's health of the object as it is in the WDS (with the returned .status).
	Health *healthReport `json:"health,omitempty"`
	// Rule is what makes the aggregate (aggregation.Engine.Rule); HealthCheck what judges health
	// ("lua/<source>/<key>", "go", or "" when Argo CD does not judge the kind).
	Rule        string           `json:"rule"`
	HealthCheck string           `json:"healthCheck,omitempty"`
	Status      map[string]any   `json:"status,omitempty"`
	WECs        []wecReport      `json:"wecs"`
	Combined    []combinedReport `json:"combinedStatuses"`
}

type healthReport struct {
	Status  health.Status `json:"status"`
	Message string        `json:"message,omitempty"`
}

type wecReport struct {
	Name string `json:"name"`
	// Reported is false for a destination that has no WorkStatus yet.
	Reported       bool          `json:"reported"`
	Health         *healthReport `json:"health,omitempty"`
	LastGeneration int64         `json:"lastGeneration,omitempty"`
	Applied        bool          `json:"lastGenerationIsApplied,omitempty"`
	Updated        string        `json:"lastCurrencyUpdateTime,omitempty"`
}

type combinedReport struct {
	Name          string                                   `json:"name"`
	BindingPolicy string                                   `json:"bindingPolicy"`
	Results       []controlv1alpha1.NamedStatusCombination `json:"results"`
}

// complete says whether every destination has reported and some CombinedStatus exists.
func complete(r *statusReport) bool {
	if len(r.WECs) == 0 || len(r.Combined) == 0 {
		return false
	}
	for _, w := range r.WECs {
		if !w.Reported {
			return false
		}
	}
	return true
}

func healthOf(res health.Result, err error) *healthReport {
	if err != nil {
		return &healthReport{Status: health.Unknown, Message: err.Error()}
	}
	return &healthReport{Status: res.Status, Message: res.Message}
}
