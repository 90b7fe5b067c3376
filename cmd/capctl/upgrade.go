package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/upgrade"
)

func newCmdUpgrade(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "upgrade",
		Short:   "Plan and apply provider upgrades; plan the fleet's Kubernetes upgrades",
		Long: strings.TrimSpace(`
Plan and apply upgrades of the providers of a management cluster, and plan the Kubernetes
upgrades of its workload clusters.`),
	}
	cmd.AddCommand(newCmdUpgradePlan(f, nil), newCmdUpgradeApply(f, nil), newCmdUpgradeHistory(f, nil))
	return cmd
}

// UpgradeHistoryOptions is `capctl upgrade history [NAME]` parsed from its flags.
type UpgradeHistoryOptions struct {
	deps
	Request fleetupgrade.HistoryRequest
	Output  output.Format
}

// newCmdUpgradeHistory builds `capctl upgrade history`; runF, when set, replaces running it (tests).
func newCmdUpgradeHistory(f *factory, runF func(*UpgradeHistoryOptions) error) *cobra.Command {
	o := &UpgradeHistoryOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "history [NAME]",
		Short: "List the fleet rollouts recorded in the management cluster, or show one",
		Long: strings.TrimSpace(`
List the rollouts "capctl upgrade apply --kubernetes-version" (or --plan) recorded in the
management cluster, newest first: one ConfigMap per rollout in namespace ` + fleetupgrade.AuditNamespace + `, labelled
` + fleetupgrade.AuditLabel + `, with who ran it (as the API server authenticated them), when, the plan's
digest, each wave's start, end and gates, and each cluster's result. The record is written before
the first patch and after every step: a rollout killed midway shows state Running and what it
had done. With NAME, show that rollout.`),
		Example: strings.TrimSpace(`
  capctl upgrade history
  capctl upgrade history -o json
  capctl upgrade history fleet-upgrade-20261205-020000-a1b2c3`),
		Args: cobra.MaximumNArgs(1),
		RunE: leafRun(o, o.complete, runF, runUpgradeHistory),
	}
	addFormatFlag(cmd, &o.Output, "json and yaml print the records")
	return cmd
}

// complete takes the rollout's name, if one is given.
func (o *UpgradeHistoryOptions) complete(args []string) error {
	if len(args) == 1 {
		o.Request.Name = args[0]
	}
	return nil
}

// runUpgradeHistory makes the one fleetupgrade.RunHistory call and prints the records (or the one named).
func runUpgradeHistory(ctx context.Context, o *UpgradeHistoryOptions) error {
	e, err := o.env(ctx, multicluster.Selection{})
	if err != nil {
		return err
	}
	res, err := fleetupgrade.RunHistory(ctx, e, o.Request)
	if err != nil {
		return err
	}
	if err := output.Render(o.IO.Out, o.Output, res, res.RenderText); err != nil {
		return err
	}
	if res.Unreadable != nil {
		// The records that could be read are shown; the others are named, and the exit code
		// says the view is partial.
		fmt.Fprintf(o.IO.ErrOut, "Warning: %v\n", res.Unreadable)
	}
	return exitCode(res.ExitCode())
}

// UpgradePlanOptions is `capctl upgrade plan` parsed from its flags.
type UpgradePlanOptions struct {
	deps
	// FleetPlanRequest is the one request of `upgrade plan --kubernetes-version`; without a
	// KubernetesVersion the providers' plan is asked for instead.
	fleetupgrade.FleetPlanRequest
	AllNamespaces bool
	Output        output.Format
	// Contexts are the management clusters of --contexts/--all-contexts.
	Contexts multicluster.Selection

	rolloutFlags rolloutFlags
	flags        *pflag.FlagSet
}

const upgradePlanLong = `
Show the upgrades available to the providers of the management cluster.

With --kubernetes-version, show instead how every workload cluster gets to that Kubernetes
version: minor by minor (Kubernetes cannot skip a minor), the control plane before the workers
(workers follow at the target, or earlier when they would fall more than 3 minors behind the
control plane), clusters grouped and ordered by their upgrade wave, the value of the label
` + fleetupgrade.WaveLabel + ` (or ` + fleetupgrade.PlainWaveLabel + `), lowest first, clusters without
the label last. Clusters that cannot be planned are listed with the reason.

With --contexts or --all-contexts, plan every chosen management cluster: one table with a first
MANAGEMENT column, each management cluster's summary, and for the providers which management
clusters run which version and contract where they differ. With --kubernetes-version the waves
span the management clusters, as "capctl upgrade apply --kubernetes-version" with the same
flags rolls them. Exit code 3 when a management cluster could not be read (the others are
shown), 1 when the command failed.

With --save FILE, also write the plan to FILE (mode 0600) for review: the selection, every
cluster with its management cluster, UID, versions, ClusterClass, and the metadata.generation
and resourceVersion it was planned against, the waves, their steps, how they will be rolled
(--max-parallel and the other rollout flags), and a SHA-256 digest of it all.
"capctl upgrade apply --plan FILE" applies exactly that plan.

Without --kubernetes-version, --save FILE writes the providers' upgrade of the current contract:
each provider's version now and the version it goes to, and for a provider read from an OCI
registry (oci://) the artifact of that version by digest. "capctl upgrade apply --plan FILE"
upgrades exactly those, and refuses before any change when a provider's installed version is no
longer the planned one or a version's tag now names another artifact (both digests named).`

// newCmdUpgradePlan builds `capctl upgrade plan`; runF, when set, replaces running it (tests).
func newCmdUpgradePlan(f *factory, runF func(*UpgradePlanOptions) error) *cobra.Command {
	o := &UpgradePlanOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show the upgrades available to the providers, or the fleet's Kubernetes upgrade path",
		Long:  strings.TrimSpace(upgradePlanLong),
		Example: strings.TrimSpace(`
  capctl upgrade plan --kubernetes-version v1.33.2
  capctl upgrade plan --kubernetes-version v1.33.2 -o json
  capctl upgrade plan --all-contexts
  capctl upgrade plan --kubernetes-version v1.33.2 --contexts eu-1,us-1
  capctl upgrade plan --kubernetes-version v1.33.2 -l env=prod --save plan.json`),
		Args: cobra.NoArgs,
	}
	cmd.RunE = leafRun(o, o.complete, runF, runUpgradePlan)
	o.flags = cmd.Flags()
	cmd.Flags().StringVar(&o.KubernetesVersion, "kubernetes-version", "", "Plan the Kubernetes upgrade of every workload cluster to this version (vX.Y.Z)")
	cmd.Flags().StringVar(&o.Save, "save", "", "Also write the plan to this file (0600) for review and `upgrade apply --plan`: the fleet's with --kubernetes-version, else the providers' upgrade of the current contract")
	o.rolloutFlags.add(cmd, "--kubernetes-version")
	addFleetSelectionFlags(cmd, &o.Selection, &o.AllNamespaces)
	addFormatFlag(cmd, &o.Output, "json and yaml print the plan")
	addContextsFlags(cmd, &o.Contexts)
	for _, name := range rolloutFlagNames {
		requireFlags(cmd, "shapes a fleet plan", []string{name}, "kubernetes-version")
	}
	return cmd
}

// complete checks the flags and completes the fleet plan's request (with --kubernetes-version),
// before any cluster call.
func (o *UpgradePlanOptions) complete([]string) error {
	if err := checkContextsFlags(o.flags, o.Contexts); err != nil {
		return err
	}
	if o.KubernetesVersion == "" {
		return nil
	}
	var err error
	if o.Rollout, err = o.rolloutFlags.toRollout(); err != nil {
		return err
	}
	if err := o.FleetPlanRequest.Complete(); err != nil {
		return usageError{err}
	}
	return nil
}

// runUpgradePlan makes the one fleet plan call (with --kubernetes-version) or the one providers'
// plan call, over the management cluster or those of --contexts/--all-contexts.
func runUpgradePlan(ctx context.Context, o *UpgradePlanOptions) error {
	e, err := o.env(ctx, o.Contexts)
	if err != nil {
		return err
	}
	if o.KubernetesVersion != "" {
		res, err := fleetupgrade.Plan(ctx, e, o.FleetPlanRequest)
		if err != nil {
			return err
		}
		if err := output.Render(o.IO.Out, o.Output, res, res.RenderText); err != nil {
			return err
		}
		return exitCode(res.ExitCode())
	}
	e.Progress = func(s string) { o.Logger().Info(s) }
	res, err := upgrade.RunPlan(ctx, e, upgrade.PlanRequest{Save: o.Save})
	if err != nil {
		return err
	}
	if err := output.Render(o.IO.Out, o.Output, res, res.RenderText); err != nil {
		return err
	}
	return exitCode(res.ExitCode())
}

// UpgradeApplyOptions is `capctl upgrade apply` parsed from its flags: Request is the one
// upgrade request.
type UpgradeApplyOptions struct {
	deps
	Request upgrade.Request
	// ApplyOptions are the provider upgrade's options (DryRun also serves the fleet's).
	upgrade.ApplyOptions
	Output output.Format
	// Fleet is the one request of `apply --kubernetes-version` (the workload clusters'
	// Kubernetes); Request is unused then.
	Fleet         *fleetupgrade.FleetApplyRequest
	AllNamespaces bool
	// Contexts are the management clusters of --contexts/--all-contexts (with
	// --kubernetes-version only).
	Contexts multicluster.Selection

	selection         fleetupgrade.FleetSelection
	kubernetesVersion string
	plan              string
	rolloutFlags      rolloutFlags
	noWait            bool
	wave              int
	timeout           time.Duration
	core              string
	refs              map[provider.Type]*[]string
	flags             *pflag.FlagSet
}

const upgradeApplyLong = `
Upgrade the providers of the management cluster: to the latest releases of a contract
(--contract v1beta2, as "capctl upgrade plan" shows), or to the versions given per provider.
With --kubernetes-version, upgrade instead the Kubernetes version of the workload clusters (see
below).

Every input is checked before anything changes: the providers must be installed, the versions
must be published releases of their repositories, no downgrade, no skip of more than 3 minors
for cluster-api and the kubeadm providers, and one contract (v1beta2) that every provider works
with. Then the old controllers are scaled to zero, and per provider the old components are deleted
(CRDs, the namespace and the inventory entry are kept), the new ones applied (CRDs updated in
place) and the inventory updated.

Container args and env that were changed on the running controllers and that the new components
do not carry are listed as warnings: the upgrade drops them, re-apply them afterwards.

With --kubernetes-version vX.Y.Z, follow the plan "capctl upgrade plan --kubernetes-version"
prints for the same selection (-n/-A, -l/--selector): wave by wave (all waves in order, or only
--wave N), --max-parallel clusters of a wave at once. Clusters with a managed topology get
spec.topology.version (the target at once when the ClusterClass lists spec.kubernetesVersions,
its topology controller then walks the minors; else one minor at a time); other clusters get
their control plane's spec.version, then every MachineDeployment/MachinePool template version,
one minor at a time. A step is done when the control plane and every Machine report the
version and are up to date and the Cluster is Available. Every cluster is checked before the
first write. The first cluster that fails or exceeds --timeout stops the run, the rest are left
untouched, and the report names the cluster, the step and why. Re-running the same command
continues from the clusters' actual state; Ctrl-C stops after the patch under way.

With --kubernetes-version and --contexts or --all-contexts, the clusters of every chosen
management cluster form one plan (the one "capctl upgrade plan --kubernetes-version" shows with
the same flags; -n/-A/-l apply inside each): a wave spans the management clusters and the next
starts only when its clusters in every management cluster are done. Every management cluster
must answer and pass its contract check, and the preflight runs on each, before the first patch;
the report names each row's management cluster.`

// newCmdUpgradeApply builds `capctl upgrade apply`; runF, when set, replaces running it (tests).
func newCmdUpgradeApply(f *factory, runF func(*UpgradeApplyOptions) error) *cobra.Command {
	o := &UpgradeApplyOptions{deps: f.deps(), refs: map[provider.Type]*[]string{}}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Upgrade the providers of the management cluster",
		Long:  strings.TrimSpace(upgradeApplyLong),
		Example: strings.TrimSpace(`
  capctl upgrade apply --contract v1beta2
  capctl upgrade apply --core capi-system/cluster-api:v1.14.0 -i capd-system/docker:v1.14.0
  capctl upgrade apply --contract v1beta2 --dry-run
  capctl upgrade apply --kubernetes-version v1.35.1 --max-parallel 3
  capctl upgrade apply --kubernetes-version v1.35.1 --wave 1 -n prod --dry-run
  capctl upgrade apply --kubernetes-version v1.35.1 --all-contexts`),
		Args: cobra.NoArgs,
	}
	cmd.RunE = leafRun(o, o.complete, runF, runUpgradeApply)
	o.flags = cmd.Flags()
	fl := cmd.Flags()
	fl.StringVar(&o.Request.Contract, "contract", "", "Upgrade every provider to the latest release of this contract (only v1beta2)")
	fl.StringVar(&o.core, "core", "", "Core provider to upgrade, as [namespace/]cluster-api:version")
	for _, t := range provider.Types[1:] {
		o.refs[t] = new([]string)
		fl.StringSliceVarP(o.refs[t], strings.TrimPrefix(t.Flag(), "--"), t.FlagShorthand(), nil, fmt.Sprintf("%s to upgrade, as [namespace/]name:version", t))
	}
	fl.BoolVar(&o.WaitProviders, "wait-providers", false, "Wait for the upgraded providers to be available")
	secondsVar(fl, &o.WaitTimeout, "wait-provider-timeout", upgrade.DefaultWaitProviderTimeout, "Seconds to wait for each provider to be available (with --wait-providers)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "Show what would change (server-side dry run), change nothing")
	fl.StringVar(&o.kubernetesVersion, "kubernetes-version", "", "Upgrade the workload clusters' Kubernetes to this version (vX.Y.Z), wave by wave")
	fl.StringVar(&o.plan, "plan", "", "Apply exactly the `file` saved by upgrade plan --save: a fleet plan (--kubernetes-version: the version, the selection and the rollout) or a providers' plan (their versions, and the artifacts of providers read from OCI registries)")
	fl.IntVar(&o.wave, "wave", 0, "With --kubernetes-version: only the clusters of this upgrade wave")
	o.rolloutFlags.add(cmd, "--kubernetes-version")
	fl.BoolVar(&o.noWait, "no-wait", false, "With --window: outside the window, exit at once saying when it opens next, instead of waiting for it")
	positiveDurationVar(fl, &o.timeout, "timeout", fleetupgrade.DefaultClusterTimeout, "With --kubernetes-version or --plan: how long one cluster may take to reach the version")
	addFleetSelectionFlags(cmd, &o.selection, &o.AllNamespaces)
	// A saved plan is applied exactly: nothing may select or shape it again.
	for _, name := range append([]string{"kubernetes-version", "wave", "namespace", "all-namespaces", "selector"}, rolloutFlagNames...) {
		cmd.MarkFlagsMutuallyExclusive("plan", name)
	}
	// The workload clusters' upgrade (--kubernetes-version or --plan) is not a provider upgrade.
	for _, fleet := range []string{"kubernetes-version", "plan"} {
		for _, name := range providerUpgradeFlags {
			cmd.MarkFlagsMutuallyExclusive(fleet, name)
		}
	}
	addFormatFlag(cmd, &o.Output, "json and yaml print the result")
	addContextsFlags(cmd, &o.Contexts)
	for _, name := range append([]string{"wave", "timeout", "no-wait"}, rolloutFlagNames...) {
		requireFlags(cmd, "shapes the workload clusters' upgrade", []string{name}, "kubernetes-version", "plan")
	}
	requireFlags(cmd, "upgrade the workload clusters of several management clusters (provider upgrades run on one management cluster, chosen with --kubeconfig-context)",
		[]string{"contexts", "all-contexts"}, "kubernetes-version", "plan")
	return cmd
}

// complete builds the one request the flags make, the fleet's (--kubernetes-version, --plan,
// or a flag that shapes a rollout) or the providers', and checks it, before any cluster call.
func (o *UpgradeApplyOptions) complete([]string) error {
	if err := checkContextsFlags(o.flags, o.Contexts); err != nil {
		return err
	}
	if o.plan != "" && upgrade.IsPlanFile(context.Background(), o.plan) {
		return o.completeProviderPlan()
	}
	fleet := o.kubernetesVersion != "" || o.plan != "" || o.noWait
	for _, name := range append([]string{"wave", "timeout"}, rolloutFlagNames...) {
		fleet = fleet || o.flags.Changed(name)
	}
	if fleet {
		return o.completeFleet()
	}
	return o.completeProviders()
}

// completeFleet builds the fleet request of --kubernetes-version or --plan (the flags of a
// provider upgrade are refused with them by cobra, see newCmdUpgradeApply).
func (o *UpgradeApplyOptions) completeFleet() error {
	req := &fleetupgrade.FleetApplyRequest{Plan: o.plan, DryRun: o.DryRun, Timeout: o.timeout, NoWait: o.noWait}
	if o.plan == "" {
		rollout, err := o.rolloutFlags.toRollout()
		if err != nil {
			return err
		}
		sel := o.selection
		if o.flags.Changed("wave") {
			w := o.wave
			sel.Wave = &w
		}
		req.KubernetesVersion, req.Selection, req.Rollout = o.kubernetesVersion, sel, rollout
	}
	if err := req.Complete(); err != nil {
		return usageError{err}
	}
	o.Fleet = req
	return nil
}

// rolloutFlagNames are the flags that say how a fleet's waves are rolled: given to
// `upgrade apply --kubernetes-version`, or to `upgrade plan --save` that saves them for --plan.
var rolloutFlagNames = []string{"max-parallel", "canary", "max-failures", "soak", "gate-command", "window"}

// rolloutFlags is the flag group of how a fleet change is rolled (--max-parallel, --canary,
// --max-failures, --soak, --gate-command, --window): every command that rolls one registers it
// with add and converts it with toRollout (kubectl's PrintFlags pattern), so the flags read the
// same and convert the same everywhere.
type rolloutFlags struct {
	rollout     fleetupgrade.Rollout
	maxParallel string
}

// add registers the group; with names what makes the flags apply ("--kubernetes-version").
func (f *rolloutFlags) add(cmd *cobra.Command, with string) {
	fl, w := cmd.Flags(), "With "+with+": "
	fl.StringVar(&f.maxParallel, "max-parallel", strconv.Itoa(fleetupgrade.DefaultMaxParallel), w+"clusters of a wave changed at once, a number or a percentage of the wave (25%, rounded down, at least 1)")
	fl.IntVar(&f.rollout.Canary, "canary", 0, w+"make a first wave of this many clusters (the first by management cluster, namespace, name); only when no cluster has a wave label")
	fl.IntVar(&f.rollout.MaxFailures, "max-failures", 0, w+"how many clusters may fail before the rollout stops (0: the first failure stops it); each failure is reported")
	fl.DurationVar((*time.Duration)(&f.rollout.Soak), "soak", 0, w+"after each wave, watch its clusters this long (each must stay Available, no MachineHealthCheck remediation, no new diagnose finding), else stop")
	fl.StringVar(&f.rollout.GateCommand, "gate-command", "", w+"run this shell command after each wave and its soak (env CAPCTL_WAVE, CAPCTL_WAVE_INDEX, CAPCTL_WAVES, CAPCTL_CLUSTERS, CAPCTL_KUBERNETES_VERSION or CAPCTL_ROLLOUT_AFTER, CAPCTL_PLAN_DIGEST); a non-zero exit stops the rollout")
	fl.Var(windowFlag{&f.rollout.Window}, "window", w+"start waves only in this window, like 'Sat,Sun 02:00-06:00 UTC' (days optional, a range may cross midnight, zone UTC or IANA)")
}

// toRollout is the group's value: the flags as given, --max-parallel converted (the rest is
// checked by the fleet request).
func (f *rolloutFlags) toRollout() (fleetupgrade.Rollout, error) {
	r := f.rollout
	if err := r.SetMaxParallel(f.maxParallel); err != nil {
		return r, usageError{err}
	}
	return r, nil
}

// providerUpgradeFlags are the flags of a provider upgrade: --contract, the provider flags and
// --wait-providers (--dry-run serves both upgrades).
var providerUpgradeFlags = func() []string {
	names := []string{"contract", "wait-providers"}
	for _, t := range provider.Types {
		names = append(names, strings.TrimPrefix(t.Flag(), "--"))
	}
	return names
}()

// addFleetSelectionFlags adds the flags that pick the clusters of a fleet plan or apply.
func addFleetSelectionFlags(cmd *cobra.Command, sel *fleetupgrade.FleetSelection, all *bool) {
	fl := cmd.Flags()
	addNamespaceFlags(cmd, &sel.Namespace, all, "With --kubernetes-version: only the clusters of this namespace (default: every namespace)", "With --kubernetes-version: the clusters of every namespace (the default)")
	fl.StringVarP(&sel.Selector, "selector", "l", "", "With --kubernetes-version: only the clusters matching this label selector")
	for _, name := range []string{"namespace", "all-namespaces", "selector"} {
		requireFlags(cmd, "selects workload clusters", []string{name}, "kubernetes-version")
	}
}

// completeProviders builds the provider upgrade's request from the flags and checks it, before
// any cluster call.
func (o *UpgradeApplyOptions) completeProviders() error {
	if err := o.ApplyOptions.Validate(); err != nil {
		return usageError{err}
	}
	o.Request.Providers = nil
	for _, t := range provider.Types {
		vals := []string{o.core}
		if t != provider.CoreProviderType {
			vals = *o.refs[t]
		}
		for _, v := range vals {
			if v == "" {
				continue
			}
			ref, err := parseUpgradeRef(t, v)
			if err != nil {
				return err
			}
			o.Request.Providers = append(o.Request.Providers, upgrade.Requested{Type: t, Ref: ref})
		}
	}
	if err := o.Request.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// completeProviderPlan builds the providers' upgrade a saved providers' plan names (upgrade plan
// --save without --kubernetes-version): exactly its versions, checked against it before any write.
func (o *UpgradeApplyOptions) completeProviderPlan() error {
	// (cobra already refuses --plan with the rollout and selection flags.)
	for _, name := range []string{"timeout", "no-wait", "contexts", "all-contexts"} {
		if o.flags.Changed(name) {
			return usageError{fmt.Errorf("--%s does not apply to a providers' upgrade plan (%s): it upgrades the providers of one management cluster", name, o.plan)}
		}
	}
	pf, err := upgrade.LoadPlanFile(context.Background(), o.plan)
	if err != nil {
		return err
	}
	o.Request = pf.Request()
	o.ApplyOptions.Plan, o.ApplyOptions.PlanPath = pf, o.plan
	if err := o.ApplyOptions.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// parseUpgradeRef parses one [namespace/]name:version of a provider flag (upgrade.Request.Validate checks it).
func parseUpgradeRef(t provider.Type, v string) (provider.Reference, error) {
	ref, err := provider.ParseReference(v, true)
	if err != nil {
		return ref, usageErrorf("%s: %v", t.Flag(), err)
	}
	return ref, nil
}

// runUpgradeApply makes the one upgrade.Apply (or fleetupgrade.Apply) call and prints its result.
func runUpgradeApply(ctx context.Context, o *UpgradeApplyOptions) error {
	if o.Fleet != nil {
		return runFleetApply(ctx, o)
	}
	e, err := o.env(ctx, multicluster.Selection{})
	if err != nil {
		return err
	}
	opts := o.ApplyOptions
	opts.Log = o.Logger()
	res, err := upgrade.Apply(ctx, e, upgrade.ApplyRequest{Request: o.Request, ApplyOptions: opts})
	if errors.Is(err, upgrade.ErrNothingToUpgrade) {
		return upgrade.RenderNothingToUpgrade(o.IO.Out)
	}
	upgrade.RenderWarnings(o.IO.ErrOut, res)
	if err != nil {
		return err
	}
	return output.Render(o.IO.Out, o.Output, res, func(w io.Writer) error { return upgrade.RenderApplyResult(w, res) })
}

// fleetApplyDone prints the fleet apply's report (an upgrade or a rotation) and says how the run
// ended.
func fleetApplyDone(out io.Writer, format output.Format, rep *fleetupgrade.FleetApplyReport, err error) error {
	if rep == nil {
		return err
	}
	if rerr := output.Render(out, format, rep, func(w io.Writer) error { return fleetupgrade.RenderApplyReport(w, rep) }); rerr != nil {
		return rerr
	}
	return fleetupgrade.EndError(rep, err)
}

// runFleetApply rolls the workload clusters' Kubernetes version (the one fleetupgrade.Apply
// call, over the management cluster or those of --contexts/--all-contexts) and prints the
// report; when it stops it prints the report and why, then how to continue.
func runFleetApply(ctx context.Context, o *UpgradeApplyOptions) error {
	return runFleet(ctx, o.deps, o.Contexts, o.Output, *o.Fleet, "")
}

// runFleet makes the one fleetupgrade.Apply call of a fleet change (an upgrade or a rotation)
// over the management cluster or those of sel, with progress lines (first, when set, leads
// them) and diagnose's rules as the soak's health check, and prints the report.
func runFleet(ctx context.Context, d deps, sel multicluster.Selection, format output.Format, req fleetupgrade.FleetApplyRequest, first string) error {
	e, err := d.env(ctx, sel)
	if err != nil {
		return err
	}
	progress := output.NewProgress(d.IO)
	e.Progress = func(s string) { progress.Step("%s", s) }
	if first != "" {
		progress.Step("%s", first)
	}
	req.Health = diagnose.SoakHealth
	rep, err := fleetupgrade.Apply(ctx, e, req)
	return fleetApplyDone(d.IO.Out, format, rep, err)
}
