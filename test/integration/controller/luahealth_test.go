package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
)

// luaHealthConfigMap is the ConfigMap of Lua health checks the manager of TestController reads.
const luaHealthNamespace, luaHealthName = "lua-health", "checks"

// testLuaHealth: a CronJob (judged by Argo CD's Lua check) returned from two WECs keeps the worst
// WEC's status — the generic rules would keep only the fields both agree on, and Argo CD would
// see a Healthy CronJob — and a user's check in the ConfigMap takes over, its broken entry
// reported by an Event.
func testLuaHealth(t *testing.T, c client.Client) {
	ns := "luahealth"
	ensureNamespace(t, c, ns)
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 1 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}}}
	create(t, c, cj, policy(ns, []string{"wec1", "wec2"}, clause("batch", "cronjobs", ns, nil, multi)))
	ref := controlv1alpha1.SourceRef{Group: "batch", Version: "v1", Resource: "cronjobs", Kind: "CronJob", Namespace: ns, Name: "nightly"}
	report(t, c, "wec1", ref, map[string]any{"lastScheduleTime": "2026-01-02T01:00:00Z", "lastSuccessfulTime": "2026-01-02T01:00:05Z"}, applied(1))
	report(t, c, "wec2", ref, map[string]any{"lastScheduleTime": "2026-01-02T01:00:00Z", "lastSuccessfulTime": "2026-01-01T01:00:05Z"}, applied(1))
	successOf := func(want string) func() error {
		return func() error {
			u, err := getObject(c, cj, ns, "nightly")
			if err != nil {
				return err
			}
			if got, _, _ := unstructured.NestedString(u.Object, "status", "lastSuccessfulTime"); got != want {
				return fmt.Errorf("lastSuccessfulTime %q, want %q", got, want)
			}
			return nil
		}
	}
	eventually(t, "the Degraded WEC's status (Argo CD's check)", successOf("2026-01-01T01:00:05Z"))

	ensureNamespace(t, c, luaHealthNamespace)
	create(t, c, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: luaHealthNamespace, Name: luaHealthName}, Data: map[string]string{
		// this team treats a recent success as the only thing that matters: wec1's report is now the worse
		"resource.customizations.health.batch_CronJob": `if obj.status.lastSuccessfulTime > "2026-01-02" then return {status = "Progressing"} end
return {status = "Healthy"}`,
		"resource.customizations.health.example.com_Broken": "return {",
	}})
	eventually(t, "the worst WEC by the user's check", successOf("2026-01-02T01:00:05Z"))
	eventually(t, "an Event about the broken entry", func() error {
		var evs eventsv1.EventList
		if err := c.List(context.Background(), &evs, client.InNamespace(luaHealthNamespace)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "InvalidLuaHealthCheck" && e.Regarding.Name == luaHealthName && strings.Contains(e.Note, "example.com_Broken") {
				return nil
			}
		}
		return fmt.Errorf("no InvalidLuaHealthCheck Event among %d", len(evs.Items))
	})
}
