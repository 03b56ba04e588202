package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	"github.com/statusfold/statusfold/local"
)

// defaultWDSName is the WDS name `statusfold manager` and `statusfold local` use by default.
const defaultWDSName = "wds1"

// statusOptions are the flags of `statusfold status`.
type statusOptions struct {
	kf            kubeFlags
	itsKubeconfig string
	itsContext    string
	wdsName       string
	namespace     string
	output        string
	waitFor       time.Duration
	lua           string
}

// newStatusCommand is `statusfold status`: the combined status of one workload object, read from
// the WDS and the ITS.
func newStatusCommand() *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status TYPE/NAME",
		Short: "Show the combined status of a workload object: CombinedStatus tables, the returned .status, each WEC's health",
		Long: `status shows, for one workload object in the WDS named like kubectl does (deployment/nginx,
deploy nginx, jobs.batch/pi): Argo CD's health of the object with the .status statusfold returned
into it, each WEC's reported state with its own Argo CD health (from the WorkStatuses; by the kind's
Lua health check when it has one), the rule that makes the aggregate, and the results of every
CombinedStatus about it, as tables.

Installed as kubectl-statusfold on the PATH, it is a kubectl plugin: kubectl statusfold status ...`,
		Example: `  statusfold status deployment/nginx -n demo
  kubectl statusfold status job/pi -n demo -o yaml
  statusfold status deployment/nginx -n demo --wait 1m   # wait until every WEC has reported`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	o.register(cmd)
	return cmd
}

// register adds the flags of `statusfold status` to cmd.
func (o *statusOptions) register(cmd *cobra.Command) {
	o.kf.register(cmd)
	cmd.Flags().StringVar(&o.itsKubeconfig, "its-kubeconfig", "", "kubeconfig of the ITS, where the WorkStatuses are (default: the WDS's, for a WDS and ITS in one apiserver)")
	cmd.Flags().StringVar(&o.itsContext, "its-context", "", "kubeconfig context of the ITS")
	cmd.Flags().StringVar(&o.wdsName, "wds-name", defaultWDSName, "the WDS's name: only WorkStatuses labelled "+controlv1alpha1.LabelOriginWDSName+"=NAME are read, as the controller does")
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "namespace of the object (default: the kubeconfig context's)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table, yaml or json")
	cmd.Flags().DurationVar(&o.waitFor, "wait", 0, "wait up to this long until every destination WEC has reported and a CombinedStatus exists")
	cmd.Flags().StringVar(&o.lua, "lua-health", "", luaHealthFlagHelp)
}

// run is the body of `statusfold status`: it resolves the object named by args, reads its report
// (with --wait, until it is complete or the wait runs out) and prints it in the --output format.
func (o *statusOptions) run(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	cfg, itsCfg, err := o.clientConfigs()
	if err != nil {
		return err
	}
	s, err := newStatusReader(cfg, itsCfg, o.wdsName)
	if err != nil {
		return err
	}
	if o.lua != "" {
		if s.engine, err = luaEngine(o.lua, cmd.ErrOrStderr()); err != nil {
			return err
		}
	}
	gvr, gvk, name, err := s.resolve(args)
	if err != nil {
		return err
	}
	rep, err := s.read(ctx, gvr, gvk, o.namespace, name)
	if err != nil {
		return err
	}
	if o.waitFor > 0 && !complete(rep) {
		if rep, err = o.waitUntilComplete(ctx, cmd.ErrOrStderr(), s, rep, gvr, gvk, name); err != nil {
			return err
		}
	}
	return printStatus(cmd.OutOrStdout(), rep, o.output)
}

// clientConfigs loads the WDS's client config and the ITS's (the WDS's own, the same pointer,
// without --its-kubeconfig and --its-context), and defaults --namespace to the kubeconfig
// context's.
func (o *statusOptions) clientConfigs() (cfg, itsCfg *rest.Config, err error) {
	loader := o.kf.loader()
	cfg, err = loader.ClientConfig()
	if err != nil {
		return nil, nil, err
	}
	if o.namespace == "" {
		if o.namespace, _, err = loader.Namespace(); err != nil {
			return nil, nil, err
		}
	}
	itsCfg = cfg
	if o.itsKubeconfig != "" || o.itsContext != "" {
		its := kubeFlags{kubeconfig: o.itsKubeconfig, context: o.itsContext}
		if itsCfg, err = its.loader().ClientConfig(); err != nil {
			return nil, nil, fmt.Errorf("ITS: %w", err)
		}
	}
	return cfg, itsCfg, nil
}

// waitUntilComplete reads the report again every second, up to --wait, until every WEC has
// reported and a CombinedStatus exists, showing progress on progress. It returns the last report
// read: complete, or not when the wait ran out.
func (o *statusOptions) waitUntilComplete(ctx context.Context, progress io.Writer, s *statusReader, rep *statusReport,
	gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, name string) (*statusReport, error) {
	done := local.Progress(progress, "waiting for every WEC to report and a CombinedStatus")
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.waitFor, false, func(ctx context.Context) (bool, error) {
		r, err := s.read(ctx, gvr, gvk, o.namespace, name)
		if err != nil {
			return false, err
		}
		rep = r
		return complete(rep), nil
	})
	done(complete(rep))
	if err != nil && !wait.Interrupted(err) {
		return nil, err
	}
	return rep, nil
}
