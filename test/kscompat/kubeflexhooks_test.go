package kscompat

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// coreChartVars are the variables KubeStellar's core chart gives a WDS ControlPlane's hooks
// (globalVars ControlPlaneName and ITSName; kubestellar-controller's APIGroups).
var coreChartVars = map[string]any{"ITSName": itsName, "APIGroups": ""}

// managerArgsOf reads the args of the container named "manager" of a Deployment.
func (s *space) managerArgsOf(nn types.NamespacedName) ([]string, map[string]string) {
	s.t.Helper()
	d := &appsv1.Deployment{}
	if err := s.c.Get(context.Background(), nn, d); err != nil {
		s.t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c.Args, d.Annotations
		}
	}
	s.t.Fatalf("%s has no container manager", nn)
	return nil, nil
}

// statusfoldCLI runs the statusfold binary against the space (its hosting cluster).
func (s *space) statusfoldCLI(args ...string) string {
	s.t.Helper()
	cmd := exec.Command(statusfoldBin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("statusfold %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestKubeStellarTakeoverGiveback renders KubeStellar's controller-manager Deployment as its core
// chart's PostCreateHook kubestellar-controller makes it (Helm, then KubeFlex's templating),
// applies it as KubeFlex does, and runs `statusfold kubestellar takeover` and `giveback`: the
// arguments get --controllers=binding, then exactly their old value. A re-apply of the hook by
// KubeFlex's field owner while taken over conflicts instead of undoing the takeover; after
// giveback it applies cleanly.
func TestKubeStellarTakeoverGiveback(t *testing.T) {
	s := startSpace(t)
	s.installPostCreateHookCRD()
	objs := s.kubeflexRender(coreChartHook(t), wdsName, coreChartVars)
	if err := s.kubeflexApply(wdsName, objs); err != nil {
		t.Fatal(err)
	}
	nn := types.NamespacedName{Namespace: wdsName + "-system", Name: "kubestellar-controller-manager"}
	before, _ := s.managerArgsOf(nn)
	if !slices.Contains(before, "--wds-name="+wdsName) || !slices.Contains(before, "--its-name="+itsName) {
		t.Fatalf("rendered args %v", before)
	}

	t.Log(s.statusfoldCLI("kubestellar", "takeover", "--wds-name", wdsName))
	args, ann := s.managerArgsOf(nn)
	if want := append(slices.Clone(before), "--controllers=binding"); !slices.Equal(args, want) {
		t.Errorf("after takeover: %v, want %v", args, want)
	}
	if ann["statusfold.dev/kubestellar-args-before-takeover"] == "" {
		t.Errorf("after takeover no annotation keeps the old arguments: %v", ann)
	}
	if out := s.statusfoldCLI("kubestellar", "takeover", "--wds-name", wdsName); !strings.Contains(out, "already runs") {
		t.Errorf("second takeover: %q", out)
	}
	err := s.kubeflexApply(wdsName, objs)
	if !apierrors.IsConflict(err) {
		t.Errorf("KubeFlex's re-apply while taken over: %v, want a conflict", err)
	}
	if args, _ := s.managerArgsOf(nn); !slices.Contains(args, "--controllers=binding") {
		t.Errorf("after KubeFlex's re-apply: %v", args)
	}

	t.Log(s.statusfoldCLI("kubestellar", "giveback", "--wds-name", wdsName))
	args, ann = s.managerArgsOf(nn)
	if !slices.Equal(args, before) {
		t.Errorf("after giveback: %v, want %v", args, before)
	}
	if _, kept := ann["statusfold.dev/kubestellar-args-before-takeover"]; kept {
		t.Errorf("after giveback the annotation stays: %v", ann)
	}
	if err := s.kubeflexApply(wdsName, objs); err != nil {
		t.Errorf("KubeFlex's re-apply after giveback: %v", err)
	}
}

// TestStatusfoldPostCreateHook renders config/kubeflex/statusfold-postcreatehook.yaml as KubeFlex
// renders hooks, with the variables KubeStellar's core chart gives a WDS, and applies the result to
// the apiserver as KubeFlex does: every object is accepted, and the manager is told its WDS and ITS.
func TestStatusfoldPostCreateHook(t *testing.T) {
	s := startSpace(t)
	s.installPostCreateHookCRD()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "config", "kubeflex", "statusfold-postcreatehook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := s.kubeflexRender(decodeOne(t, data), wdsName, coreChartVars)
	if err := s.kubeflexApply(wdsName, objs, client.DryRunAll); err != nil {
		t.Fatalf("server-side dry run: %v", err)
	}
	if err := s.kubeflexApply(wdsName, objs); err != nil {
		t.Fatal(err)
	}
	args, _ := s.managerArgsOf(types.NamespacedName{Namespace: wdsName + "-system", Name: "statusfold-manager"})
	for _, want := range []string{"--kubeflex", "--wds-name=" + wdsName, "--its-name=" + itsName, "--binding-resolution=external"} {
		if !slices.Contains(args, want) {
			t.Errorf("statusfold's manager lacks %s: %v", want, args)
		}
	}
	t.Logf("%d objects applied", len(objs))
}
