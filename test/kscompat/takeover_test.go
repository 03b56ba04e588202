package kscompat

import (
	"context"
	"fmt"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTakeOver switches a running KubeStellar from its status controller to statusfold, as
// docs/kubestellar.md describes: the CombinedStatus that KubeStellar's status controller wrote is
// rewritten by statusfold, in place (same name), with what statusfold computes.
func TestTakeOver(t *testing.T) {
	s := startSpace(t)
	ctx := context.Background()
	sumFixture(ctx, t, s, "takeover")
	sumIs := func(procs []*process, want string) *ksv1alpha1.CombinedStatus {
		t.Helper()
		var got *ksv1alpha1.CombinedStatus
		s.eventually("CombinedStatus shows "+want, 2*time.Minute, procs, func(ctx context.Context) (bool, string) {
			css, err := s.combinedStatuses(ctx, corpusNamespace)
			if err != nil {
				return false, err.Error()
			}
			got = css["o-takeover/takeover"]
			if got == nil || len(got.Results) != 1 {
				return false, fmt.Sprintf("have %v", sortedKeys(css))
			}
			text := rowsText(&got.Results[0])
			return text == want, text
		})
		return got
	}

	ks := s.startKubeStellar("binding,status")
	s.create(bindingPolicy("takeover", map[string]string{"kscompat": "takeover"}, "", "configmaps",
		map[string]string{"kscompat": "takeover"}, ksv1alpha1.DownsyncModulation{StatusCollectors: []string{"a-sum"}}))
	before := sumIs([]*process{ks}, "[sum] (Number:3)") // avail 0 + 1 + 2
	ks.stop()

	// While no status controller runs, c1 reports avail 10; then statusfold starts.
	st := baseStatus(0)
	st["avail"] = int64(10)
	if err := s.report(ctx, "c1", configMapRef(corpusNamespace, "o-takeover"), st); err != nil {
		t.Fatal(err)
	}
	ksb := s.startKubeStellar("binding")
	s.waitForLog(ksb, `"Starting controller" logger="setup" name="Binding"`, time.Minute)
	sf := s.startStatusfold()
	after := sumIs([]*process{ksb, sf}, "[sum] (Number:13)")
	if after.UID != before.UID || after.Name != before.Name {
		t.Errorf("statusfold replaced KubeStellar's CombinedStatus %s (%s) by %s (%s) instead of rewriting it", before.Name, before.UID, after.Name, after.UID)
	}
}

// sumFixture creates, labelled kscompat=name, three WECs, a ConfigMap "o-<name>" in the corpus
// namespace, and the collector "a-sum" (SUM of returned.status.avail), and has each WEC report its
// base status for the ConfigMap: what the latency and takeover tests start from.
func sumFixture(ctx context.Context, t *testing.T, s *space, name string) {
	t.Helper()
	for _, w := range corpusWECs[:3] {
		s.addWEC(w.name, map[string]string{"kscompat": "takeover"})
	}
	s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corpusNamespace}})
	s.create(statusCollector("a-sum", agg("sum", aggSum, "returned.status.avail")))
	s.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o-takeover", Namespace: corpusNamespace,
		Labels: map[string]string{"kscompat": "takeover"}}})
	for i, w := range corpusWECs[:3] {
		if err := s.report(ctx, w.name, configMapRef(corpusNamespace, "o-takeover"), baseStatus(i)); err != nil {
			t.Fatal(err)
		}
	}
}
