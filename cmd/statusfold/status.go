package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/statusfold/statusfold/aggregator"
	controlv1alpha1 "github.com/statusfold/statusfold/api/control/v1alpha1"
	sfscheme "github.com/statusfold/statusfold/api/scheme"
	"github.com/statusfold/statusfold/local"
	"github.com/statusfold/statusfold/policy/health"
)

// defaultWDSName is the WDS name `statusfold manager` and `statusfold local` use by default.
const defaultWDSName = "wds1"

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
	Health   *healthReport    `json:"health,omitempty"`
	Status   map[string]any   `json:"status,omitempty"`
	WECs     []wecReport      `json:"wecs"`
	Combined []combinedReport `json:"combinedStatuses"`
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

func newStatusCommand() *cobra.Command {
	var (
		kf            kubeFlags
		itsKubeconfig string
		itsContext    string
		wdsName       string
		namespace     string
		output        string
		waitFor       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status TYPE/NAME",
		Short: "Show the combined status of a workload object: CombinedStatus tables, the returned .status, each WEC's health",
		Long: `status shows, for one workload object in the WDS named like kubectl does (deployment/nginx,
deploy nginx, jobs.batch/pi): Argo CD's health of the object with the .status statusfold returned
into it, each WEC's reported state with its own Argo CD health (from the WorkStatuses), and the
results of every CombinedStatus about it, as tables.

Installed as kubectl-statusfold on the PATH, it is a kubectl plugin: kubectl statusfold status ...`,
		Example: `  statusfold status deployment/nginx -n demo
  kubectl statusfold status job/pi -n demo -o yaml
  statusfold status deployment/nginx -n demo --wait 1m   # wait until every WEC has reported`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			loader := kf.loader()
			cfg, err := loader.ClientConfig()
			if err != nil {
				return err
			}
			if namespace == "" {
				if namespace, _, err = loader.Namespace(); err != nil {
					return err
				}
			}
			itsCfg := cfg
			if itsKubeconfig != "" || itsContext != "" {
				its := kubeFlags{kubeconfig: itsKubeconfig, context: itsContext}
				if itsCfg, err = its.loader().ClientConfig(); err != nil {
					return fmt.Errorf("ITS: %w", err)
				}
			}
			s, err := newStatusReader(cfg, itsCfg, wdsName)
			if err != nil {
				return err
			}
			gvr, gvk, name, err := s.resolve(args)
			if err != nil {
				return err
			}
			rep, err := s.read(ctx, gvr, gvk, namespace, name)
			if err != nil {
				return err
			}
			if waitFor > 0 && !complete(rep) {
				done := local.Progress(cmd.ErrOrStderr(), "waiting for every WEC to report and a CombinedStatus")
				err := wait.PollUntilContextTimeout(ctx, time.Second, waitFor, false, func(ctx context.Context) (bool, error) {
					r, err := s.read(ctx, gvr, gvk, namespace, name)
					if err != nil {
						return false, err
					}
					rep = r
					return complete(rep), nil
				})
				done(complete(rep))
				if err != nil && !wait.Interrupted(err) {
					return err
				}
			}
			return printStatus(cmd.OutOrStdout(), rep, output)
		},
	}
	kf.register(cmd)
	cmd.Flags().StringVar(&itsKubeconfig, "its-kubeconfig", "", "kubeconfig of the ITS, where the WorkStatuses are (default: the WDS's, for a WDS and ITS in one apiserver)")
	cmd.Flags().StringVar(&itsContext, "its-context", "", "kubeconfig context of the ITS")
	cmd.Flags().StringVar(&wdsName, "wds-name", defaultWDSName, "the WDS's name: only WorkStatuses labelled "+controlv1alpha1.LabelOriginWDSName+"=NAME are read, as the controller does")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the object (default: the kubeconfig context's)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, yaml or json")
	cmd.Flags().DurationVar(&waitFor, "wait", 0, "wait up to this long until every destination WEC has reported and a CombinedStatus exists")
	return cmd
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

type statusReader struct {
	c       client.Client // the WDS
	its     client.Client // the ITS (the WDS's client when they are one apiserver)
	mapper  meta.RESTMapper
	wdsName string
	sameITS bool
}

// newStatusReader reads the WDS through cfg and WorkStatuses through itsCfg (the same config:
// one apiserver), only those of the WDS named wdsName.
func newStatusReader(cfg, itsCfg *rest.Config, wdsName string) (*statusReader, error) {
	c, mapper, err := statusClient(cfg)
	if err != nil {
		return nil, err
	}
	s := &statusReader{c: c, its: c, mapper: mapper, wdsName: wdsName, sameITS: itsCfg == cfg}
	if !s.sameITS {
		if s.its, _, err = statusClient(itsCfg); err != nil {
			return nil, fmt.Errorf("ITS: %w", err)
		}
	}
	return s, nil
}

func statusClient(cfg *rest.Config) (client.Client, meta.RESTMapper, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	c, err := client.New(cfg, client.Options{Scheme: sfscheme.New(), Mapper: mapper})
	if err != nil {
		return nil, nil, err
	}
	return c, mapper, nil
}

// resolve turns TYPE/NAME or TYPE NAME into a resource and kind, as kubectl does (short names,
// singular and plural, resource.group).
func (s *statusReader) resolve(args []string) (schema.GroupVersionResource, schema.GroupVersionKind, string, error) {
	typ, name := args[0], ""
	if len(args) == 2 {
		name = args[1]
	} else if i := strings.Index(typ, "/"); i > 0 {
		typ, name = typ[:i], typ[i+1:]
	}
	if name == "" {
		return schema.GroupVersionResource{}, schema.GroupVersionKind{}, "", fmt.Errorf("name the object as TYPE/NAME or TYPE NAME, e.g. deployment/nginx")
	}
	fq, gr := schema.ParseResourceArg(typ)
	var gvr schema.GroupVersionResource
	var err error
	if fq != nil {
		gvr, err = s.mapper.ResourceFor(*fq)
	}
	if fq == nil || err != nil {
		gvr, err = s.mapper.ResourceFor(gr.WithVersion(""))
	}
	if meta.IsNoMatchError(err) {
		return gvr, schema.GroupVersionKind{}, "", fmt.Errorf("resource type %q is not served by the WDS (check the name, or whether its CRD or API is installed there)", typ)
	}
	if err != nil {
		return gvr, schema.GroupVersionKind{}, "", fmt.Errorf("resource type %q: %w", typ, err)
	}
	gvk, err := s.mapper.KindFor(gvr)
	return gvr, gvk, name, err
}

func (s *statusReader) read(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, namespace, name string) (*statusReport, error) {
	mapping, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		namespace = ""
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, err
	}
	r := &statusReport{ExecutingCount: obj.GetLabels()[aggregator.LabelExecutingCount]}
	r.Object.Group, r.Object.Version, r.Object.Kind, r.Object.Resource = gvk.Group, gvk.Version, gvk.Kind, gvr.Resource
	r.Object.Namespace, r.Object.Name, r.Object.Generation = namespace, name, obj.GetGeneration()
	r.Status, _, _ = unstructured.NestedMap(obj.Object, "status")
	gk := gvk.GroupKind()
	if res, ok, err := health.Of(gk, obj.Object); ok {
		r.Health = healthOf(res, err)
	}

	// Per-WEC reported state: the WorkStatuses about this object, plus destinations without one.
	key := aggregator.ObjectKey{Group: gvk.Group, Resource: gvr.Resource, Namespace: namespace, Name: name}
	var wss controlv1alpha1.WorkStatusList
	if err := s.its.List(ctx, &wss, client.MatchingLabels{controlv1alpha1.LabelOriginWDSName: s.wdsName}); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			where := "the ITS"
			if s.sameITS {
				where = "the WDS (used as the ITS: no --its-kubeconfig)"
			}
			return nil, fmt.Errorf("%s does not serve WorkStatuses (%s), so no WEC's reported state can be read; point --its-kubeconfig at the ITS",
				where, controlv1alpha1.GroupVersion.WithResource("workstatuses").GroupResource())
		}
		return nil, err
	}
	// One WorkStatus per WEC: the one the controller reads when a mailbox holds several.
	byWEC := map[string][]*controlv1alpha1.WorkStatus{}
	for i := range wss.Items {
		if ws := &wss.Items[i]; aggregator.WorkStatusObject(ws) == key {
			byWEC[ws.Namespace] = append(byWEC[ws.Namespace], ws)
		}
	}
	wecs := map[string]*wecReport{}
	for _, list := range byWEC {
		ws := aggregator.NewestWorkStatus(list)
		w := &wecReport{Name: ws.Namespace, Reported: true, LastGeneration: ws.StatusDetails.LastGeneration,
			Applied: ws.StatusDetails.LastGenerationIsApplied}
		if !ws.StatusDetails.LastCurrencyUpdateTime.IsZero() {
			w.Updated = ws.StatusDetails.LastCurrencyUpdateTime.UTC().Format(time.RFC3339)
		}
		if health.Has(gk) {
			w.Health = healthOf(wecHealth(gk, obj, ws))
		}
		wecs[w.Name] = w
	}
	dests, err := s.destinations(ctx, key)
	if err != nil {
		return nil, err
	}
	for _, d := range dests {
		if _, ok := wecs[d]; !ok {
			wecs[d] = &wecReport{Name: d}
		}
	}
	for _, w := range wecs {
		r.WECs = append(r.WECs, *w)
	}
	sort.Slice(r.WECs, func(i, j int) bool { return r.WECs[i].Name < r.WECs[j].Name })

	// CombinedStatuses, found by their labels (not by UID).
	csNamespace := namespace
	if csNamespace == "" {
		csNamespace = controlv1alpha1.ReportNamespace
	}
	var css controlv1alpha1.CombinedStatusList
	if err := s.c.List(ctx, &css, client.InNamespace(csNamespace), client.MatchingLabels{
		controlv1alpha1.LabelCombinedStatusAPIGroup:  gvk.Group,
		controlv1alpha1.LabelCombinedStatusResource:  gvr.Resource,
		controlv1alpha1.LabelCombinedStatusNamespace: namespace,
		controlv1alpha1.LabelCombinedStatusName:      name,
	}); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the WDS does not serve CombinedStatuses (%s): are statusfold's CRDs installed there?",
				controlv1alpha1.GroupVersion.WithResource("combinedstatuses").GroupResource())
		}
		return nil, err
	}
	for _, cs := range css.Items {
		r.Combined = append(r.Combined, combinedReport{Name: cs.Name, BindingPolicy: cs.Labels[controlv1alpha1.LabelCombinedStatusBindingPolicy], Results: cs.Results})
	}
	sort.Slice(r.Combined, func(i, j int) bool { return r.Combined[i].BindingPolicy < r.Combined[j].BindingPolicy })
	if r.WECs == nil {
		r.WECs = []wecReport{}
	}
	if r.Combined == nil {
		r.Combined = []combinedReport{}
	}
	return r, nil
}

// destinations are the WECs that Bindings send the object to. A failed list is an error: the
// report would otherwise leave out every WEC that has not reported yet, without saying so.
func (s *statusReader) destinations(ctx context.Context, key aggregator.ObjectKey) ([]string, error) {
	var bindings controlv1alpha1.BindingList
	if err := s.c.List(ctx, &bindings); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the WDS does not serve Bindings (%s), so the WECs the object is sent to cannot be read: are statusfold's CRDs installed there?",
				controlv1alpha1.GroupVersion.WithResource("bindings").GroupResource())
		}
		return nil, fmt.Errorf("reading the Bindings that send the object to WECs: %w", err)
	}
	var out []string
	for i := range bindings.Items {
		b := &bindings.Items[i]
		if _, ok := aggregator.BoundIn(&b.Spec, key); ok {
			out = append(out, aggregator.Destinations(&b.Spec)...)
		}
	}
	return out, nil
}

// wecHealth is Argo CD's health of the WEC's copy: the WDS object's spec with the WEC's reported
// status, and the WEC copy's own generation (statusDetails.wecGeneration; else the status's
// observedGeneration, as the WEC's generation is not reported).
func wecHealth(gk schema.GroupKind, obj *unstructured.Unstructured, ws *controlv1alpha1.WorkStatus) (health.Result, error) {
	copyObj := obj.DeepCopy()
	var st map[string]any
	if len(ws.Status.Raw) > 0 {
		if err := json.Unmarshal(ws.Status.Raw, &st); err != nil {
			return health.Result{}, err
		}
	}
	if st == nil {
		unstructured.RemoveNestedField(copyObj.Object, "status")
	} else {
		copyObj.Object["status"] = st
	}
	switch {
	case ws.StatusDetails.WECGeneration != nil:
		copyObj.SetGeneration(*ws.StatusDetails.WECGeneration)
	default:
		if og, ok := st["observedGeneration"].(float64); ok {
			copyObj.SetGeneration(int64(og))
		}
	}
	res, _, err := health.Of(gk, copyObj.Object)
	return res, err
}

func healthOf(res health.Result, err error) *healthReport {
	if err != nil {
		return &healthReport{Status: health.Unknown, Message: err.Error()}
	}
	return &healthReport{Status: res.Status, Message: res.Message}
}

func printStatus(out io.Writer, r *statusReport, format string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	case "table", "":
		printStatusTables(out, r)
		return nil
	}
	return fmt.Errorf("unknown output format %q (table, yaml or json)", format)
}

func printStatusTables(out io.Writer, r *statusReport) {
	o := r.Object
	id := o.Name
	if o.Namespace != "" {
		id = o.Namespace + "/" + o.Name
	}
	group := o.Group
	if group == "" {
		group = "core"
	}
	fmt.Fprintf(out, "%s %s (%s/%s, generation %d)\n", o.Kind, id, group, o.Version, o.Generation)
	if r.ExecutingCount != "" {
		wecs := "WECs"
		if r.ExecutingCount == "1" {
			wecs = "WEC"
		}
		fmt.Fprintf(out, "Executing in %s %s; statusfold returns their reported state into .status\n", r.ExecutingCount, wecs)
	} else {
		fmt.Fprintln(out, "No status return requested (no kubestellar.io/executing-count label)")
	}
	if r.Health != nil {
		fmt.Fprintf(out, "Health: %s%s\n", r.Health.Status, suffix(r.Health.Message))
	}

	fmt.Fprintln(out, "\nSTATUS (.status in the WDS)")
	if len(r.Status) == 0 {
		fmt.Fprintln(out, "  (empty)")
	} else {
		printStatusMap(out, r.Status)
	}

	fmt.Fprintln(out, "\nWECS")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WEC\tHEALTH\tGENERATION\tREPORTED\tMESSAGE")
	for _, w := range r.WECs {
		if !w.Reported {
			fmt.Fprintf(tw, "%s\t-\t-\tnot yet\t\n", w.Name)
			continue
		}
		h, msg := "-", ""
		if w.Health != nil {
			h, msg = string(w.Health.Status), w.Health.Message
		}
		gen := fmt.Sprintf("%d", w.LastGeneration)
		if !w.Applied {
			gen += " (not applied)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", w.Name, h, gen, orDash(w.Updated), msg)
	}
	if len(r.WECs) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t")
	}
	tw.Flush()

	for _, cs := range r.Combined {
		fmt.Fprintf(out, "\nCOMBINEDSTATUS %s (BindingPolicy %s)\n", cs.Name, cs.BindingPolicy)
		// The same tables as `statusfold eval`.
		_ = printResultTables(out, cs.Results)
	}
	if len(r.Combined) == 0 {
		fmt.Fprintln(out, "\nNo CombinedStatus (no BindingPolicy that selects this object names a StatusCollector)")
	}
}

// printStatusMap prints scalar fields as "key: value" and conditions as a table; other nested
// values as compact JSON.
func printStatusMap(out io.Writer, st map[string]any) {
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "conditions" {
			continue
		}
		fmt.Fprintf(out, "  %s: %s\n", k, compactJSON(st[k]))
	}
	conds, _ := st["conditions"].([]any)
	if len(conds) == 0 {
		return
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CONDITION\tSTATUS\tREASON\tMESSAGE")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		fmt.Fprintf(tw, "  %v\t%v\t%v\t%v\n", m["type"], m["status"], orDash(str(m["reason"])), str(m["message"]))
	}
	tw.Flush()
}

func compactJSON(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return " — " + msg
}
