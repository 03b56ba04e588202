package testutil

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// DeploymentStatus is a Deployment-shaped reported status like the load test's (test/load
// DeploymentStatus): seq makes the Progressing condition's timestamps and message differ per write.
func DeploymentStatus(seq int) map[string]any {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := epoch.Add(time.Duration(seq) * time.Second).Format(time.RFC3339)
	return map[string]any{
		"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
		"collisionCount": seq,
		"conditions": []any{
			map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
				"message": "Deployment has minimum availability.", "lastUpdateTime": epoch.Format(time.RFC3339), "lastTransitionTime": epoch.Format(time.RFC3339)},
			map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
				"message":        fmt.Sprintf("ReplicaSet %q has successfully progressed (write %d).", "app-5d8f7c9b4", seq),
				"lastUpdateTime": ts, "lastTransitionTime": ts},
		},
	}
}

// WireWorkStatus decodes a WorkStatus from its JSON, as the informer's decoder does, so that every
// string and the raw status are separate allocations, as in the cache.
func WireWorkStatus(t testing.TB, wec, obj string, seq int, status any) *controlv1alpha1.WorkStatus {
	raw, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "WorkStatus",
		"metadata": map[string]any{
			"name": "apps-v1-deployment-default-" + obj, "namespace": wec, "uid": fmt.Sprintf("uid-%s-%s", wec, obj),
			"resourceVersion": fmt.Sprint(1000 + seq), "creationTimestamp": "2026-01-01T00:00:00Z",
			"labels": map[string]string{controlv1alpha1.LabelOriginWDSName: "wds1"},
			"managedFields": []any{map[string]any{"manager": "agent", "operation": "Update", "apiVersion": "control.kubestellar.io/v1alpha1",
				"time": "2026-01-01T00:00:05Z", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:status": map[string]any{".": map[string]any{}}}}},
		},
		"spec":          map[string]any{"sourceRef": map[string]any{"group": "apps", "version": "v1", "resource": "deployments", "kind": "Deployment", "namespace": "default", "name": obj}},
		"status":        json.RawMessage(raw),
		"statusDetails": map[string]any{"lastGeneration": 1, "lastGenerationIsApplied": true, "lastCurrencyUpdateTime": "2026-01-01T00:00:00Z", "wecGeneration": 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ws controlv1alpha1.WorkStatus
	if err := json.Unmarshal(body, &ws); err != nil {
		t.Fatal(err)
	}
	return &ws
}
