package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	capi "github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/kubesupport"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/upgrade"
	"github.com/capctl/capctl/pkg/versions"
)

func init() { registerCommand(newCmdUpgrade) }

func newCmdUpgrade(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "upgrade",
		Short:   "Plan and apply provider upgrades; plan the fleet's Kubernetes upgrades",
		Long: strings.TrimSpace(`
Plan and apply upgrades of the providers of a management cluster, and plan the Kubernetes
upgrades of its workload clusters.`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
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
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Request.Name = args[0]
			}
			if runF != nil {
				return runF(o)
			}
			return runUpgradeHistory(cmd.Context(), o)
		},
	}
	output.AddFormatFlag(cmd, &o.Output, "json and yaml print the records")
	return cmd
}

// runUpgradeHistory makes the one fleetupgrade.History call and prints the records (or the one named).
func runUpgradeHistory(ctx context.Context, o *UpgradeHistoryOptions) error {
	c, err := o.Cluster(ctx)
	if err != nil {
		return err
	}
	recs, err := fleetupgrade.History(ctx, c, o.Request)
	if err != nil {
		return err
	}
	if o.Request.Name != "" {
		return output.Render(o.IO.Out, o.Output, recs[0], func(w io.Writer) error { return fleetupgrade.RenderRecord(w, recs[0]) })
	}
	return output.Render(o.IO.Out, o.Output, recs, func(w io.Writer) error { return fleetupgrade.RenderHistory(w, recs) })
}

// UpgradePlanOptions is `capctl upgrade plan` parsed from its flags.
type UpgradePlanOptions struct {
	deps
	// KubernetesVersion, when set, asks for the fleet's Kubernetes plan instead of the providers'.
	KubernetesVersion string
	// Selection picks the clusters of the Kubernetes plan (as upgrade apply does).
	Selection     fleetupgrade.FleetSelection
	AllNamespaces bool
	Output        output.Format
	// Contexts are the management clusters of --contexts/--all-contexts.
	Contexts multicluster.Selection
	// Rollout is how the saved plan will be rolled (with --kubernetes-version).
	Rollout fleetupgrade.Rollout
	// Save is the plan file to write (--save).
	Save string

	maxParallel string
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
"capctl upgrade apply --plan FILE" applies exactly that plan.`

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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.KubernetesVersion != "" {
				v, _, err := versions.Kubernetes(o.KubernetesVersion)
				if err != nil {
					return usageError{err}
				}
				o.KubernetesVersion = v // 1.34.1 and v1.34.1 alike, as generate cluster accepts them
			}
			if err := checkFleetSelection(cmd, o.KubernetesVersion, o.AllNamespaces); err != nil {
				return err
			}
			if err := checkContextsFlags(cmd, o.Contexts); err != nil {
				return err
			}
			if o.KubernetesVersion == "" {
				for _, name := range append([]string{"save"}, rolloutFlagNames...) {
					if cmd.Flags().Changed(name) {
						return usageErrorf("--%s saves or shapes a fleet plan: it needs --kubernetes-version", name)
					}
				}
			} else if err := o.Rollout.SetMaxParallel(o.maxParallel); err != nil {
				return usageError{err}
			}
			if runF != nil {
				return runF(o)
			}
			return runUpgradePlan(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.KubernetesVersion, "kubernetes-version", "", "Plan the Kubernetes upgrade of every workload cluster to this version (vX.Y.Z)")
	cmd.Flags().StringVar(&o.Save, "save", "", "With --kubernetes-version: also write the plan to this file (0600) for review and `upgrade apply --plan`")
	addRolloutFlags(cmd, &o.Rollout, &o.maxParallel)
	addFleetSelectionFlags(cmd, &o.Selection, &o.AllNamespaces)
	output.AddFormatFlag(cmd, &o.Output, "json and yaml print the plan")
	addContextsFlags(cmd, &o.Contexts)
	return cmd
}

// runUpgradePlan makes the fleet plan (with --kubernetes-version) or the providers' plan.
func runUpgradePlan(ctx context.Context, o *UpgradePlanOptions) error {
	if o.Contexts.Enabled() {
		return runUpgradePlanEach(ctx, o)
	}
	if o.KubernetesVersion != "" {
		c, err := o.Cluster(ctx)
		if err != nil {
			return err
		}
		plan, err := fleetupgrade.PlanFleet(ctx, c, c.Mapper, o.fleetPlanRequest())
		if err != nil {
			return err
		}
		return output.Render(o.IO.Out, o.Output, plan, func(w io.Writer) error { return renderFleetPlan(w, plan) })
	}
	cat, err := o.catalog(ctx)
	if err != nil {
		return err
	}
	c, err := o.Cluster(ctx)
	if err != nil {
		return err
	}
	o.Logger().Info("Checking new release availability...")
	plan, err := upgrade.Plan(ctx, c, cat)
	if err != nil {
		return err
	}
	return output.Render(o.IO.Out, o.Output, plan, func(w io.Writer) error { return renderProviderPlan(w, plan) })
}

// fleetPlanRequest is the one request of `upgrade plan --kubernetes-version`.
func (o *UpgradePlanOptions) fleetPlanRequest() fleetupgrade.FleetPlanRequest {
	return fleetupgrade.FleetPlanRequest{KubernetesVersion: o.KubernetesVersion, Selection: o.Selection, Rollout: o.Rollout, Save: o.Save}
}

// runUpgradePlanEach is runUpgradePlan over the management clusters of --contexts/--all-contexts.
func runUpgradePlanEach(ctx context.Context, o *UpgradePlanOptions) error {
	members, err := o.Members(ctx, o.Contexts)
	if err != nil {
		return err
	}
	if o.KubernetesVersion != "" {
		v, err := fleetupgrade.PlanFleetEach(ctx, members, o.fleetPlanRequest())
		if err != nil {
			return err
		}
		if err := output.Render(o.IO.Out, o.Output, v, func(w io.Writer) error { return renderFleetPlanView(w, v) }); err != nil {
			return err
		}
		return multiExit(v.ManagementClusters, false)
	}
	cat, err := o.catalog(ctx)
	if err != nil {
		return err
	}
	o.Logger().Info("Checking new release availability...")
	v := upgrade.PlanEach(ctx, members, cat)
	if err := output.Render(o.IO.Out, o.Output, v, func(w io.Writer) error { return renderProviderPlanView(w, v) }); err != nil {
		return err
	}
	return multiExit(v.ManagementClusters, false)
}

// catalog builds the repository client of the configured providers.
func (d deps) catalog(ctx context.Context) (upgrade.RepositoryCatalog, error) {
	rc, err := d.Repository(ctx, false)
	if err != nil {
		return upgrade.RepositoryCatalog{}, err
	}
	return upgrade.RepositoryCatalog{Client: rc}, nil
}

// renderProviderPlan prints, per contract, a table of the providers' next versions and what to do.
func renderProviderPlan(w io.Writer, plan *upgrade.ProviderPlan) error {
	if cm := plan.CertManager; cm != nil {
		if cm.ShouldUpgrade {
			fmt.Fprintf(w, "Cert-Manager will be upgraded from %q to %q\n\n", cm.From, cm.To)
		} else {
			fmt.Fprintf(w, "Cert-Manager is already up to date\n\n")
		}
	}
	fmt.Fprintf(w, "Management group: %s\n", plan.ManagementGroup)
	for _, cp := range plan.Contracts {
		fmt.Fprintf(w, "\nLatest release available for the %s Cluster API contract version:\n\n", cp.Contract)
		t := output.NewTable(w, "NAME", "NAMESPACE", "TYPE", "CURRENT VERSION", "NEXT VERSION", "CONTRACT")
		for _, p := range cp.Providers {
			next, contract := p.NextVersion, p.NextContract
			if next == "" {
				next, contract = "Already up to date", p.CurrentContract
			}
			t.Row(p.Name, p.Namespace, string(p.Type), p.CurrentVersion, next, contract)
		}
		if err := t.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		switch {
		case cp.UpToDate():
			fmt.Fprintln(w, "You are already up to date!")
		case len(cp.Blocked) > 0:
			fmt.Fprintf(w, "The upgrade to the %s contract is blocked: %s %s no release for it.\n", cp.Contract, cp.BlockedNames(), map[bool]string{true: "has", false: "have"}[len(cp.Blocked) == 1])
		case !cp.Supported:
			fmt.Fprintf(w, "The current version of capctl could not upgrade to the %s contract (only %s supported).\n", cp.Contract, capi.Current)
		default:
			fmt.Fprintf(w, "You can now apply the upgrade by executing the following command:\n\n%s\n", upgrade.ApplyCommand(cp.Contract))
		}
	}
	return nil
}

// renderProviderPlanView prints every management cluster's provider plan as one table with a
// MANAGEMENT column, what each can do next, then the management clusters' table and the drift.
func renderProviderPlanView(w io.Writer, v *upgrade.ProviderPlanView) error {
	t := output.NewTable(w, multicluster.Column, "NAME", "NAMESPACE", "TYPE", "CURRENT VERSION", "NEXT VERSION", "CONTRACT")
	for _, p := range v.Providers {
		next, contract := p.NextVersion, p.NextContract
		if next == "" {
			next, contract = "Already up to date", p.CurrentContract
		}
		t.Row(p.ManagementCluster, p.Name, p.Namespace, string(p.Type), p.CurrentVersion, next, contract)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, m := range v.ManagementClusters {
		plan := v.Plans[m.Name]
		if plan == nil {
			continue
		}
		if cm := plan.CertManager; cm != nil && cm.ShouldUpgrade {
			fmt.Fprintf(w, "%s: cert-manager will be upgraded from %q to %q\n", m.Name, cm.From, cm.To)
		}
		for _, cp := range plan.Contracts {
			switch {
			case cp.UpToDate():
				fmt.Fprintf(w, "%s: already up to date for the %s contract\n", m.Name, cp.Contract)
			case len(cp.Blocked) > 0:
				fmt.Fprintf(w, "%s: the upgrade to the %s contract is blocked: %s %s no release for it\n", m.Name, cp.Contract, cp.BlockedNames(), map[bool]string{true: "has", false: "have"}[len(cp.Blocked) == 1])
			case !cp.Supported:
				fmt.Fprintf(w, "%s: the current version of capctl could not upgrade to the %s contract (only %s supported)\n", m.Name, cp.Contract, capi.Current)
			default:
				fmt.Fprintf(w, "%s: %s --kubeconfig-context %s\n", m.Name, upgrade.ApplyCommand(cp.Contract), m.Name)
			}
		}
	}
	return multicluster.RenderSummary(w, v.Summary)
}

// renderFleetPlan prints the clusters wave by wave, then those that cannot be planned.
func renderFleetPlan(w io.Writer, plan *fleetupgrade.FleetPlan) error {
	return renderFleetPlanRows(w, plan, false)
}

// renderFleetPlanView prints the plan over several management clusters (a MANAGEMENT column),
// then the management clusters' table.
func renderFleetPlanView(w io.Writer, v *fleetupgrade.FleetPlanView) error {
	if err := renderFleetPlanRows(w, &v.FleetPlan, true); err != nil {
		return err
	}
	return multicluster.RenderSummary(w, v.Summary)
}

// renderFleetPlanRows prints the plan, with the MANAGEMENT column when multi.
func renderFleetPlanRows(w io.Writer, plan *fleetupgrade.FleetPlan, multi bool) error {
	n := 0
	for _, wv := range plan.Waves {
		n += len(wv.Clusters)
	}
	if n == 0 && len(plan.Unplannable) == 0 {
		fmt.Fprintln(w, map[bool]string{false: "There are no workload clusters in the management cluster.", true: "There are no workload clusters in the management clusters."}[multi])
		return nil
	}
	fmt.Fprintf(w, "Kubernetes upgrade plan to %s: %d cluster(s) in %d wave(s), %d cannot be planned.\n", plan.KubernetesVersion, n, len(plan.Waves), len(plan.Unplannable))
	if n > 0 {
		fmt.Fprintln(w)
		t := output.NewTable(w, multicluster.Lead(multi, multicluster.Column, "WAVE", "CLUSTER", "CLUSTERCLASS", "CONTROL PLANE", "WORKERS", "STEPS")...)
		for _, wv := range plan.Waves {
			for _, c := range wv.Clusters {
				t.Row(multicluster.Lead(multi, c.ManagementCluster, wv.Name(), c.Namespace+"/"+c.Name, orDash(c.ClusterClass), c.ControlPlaneVersion, c.WorkersVersion, fleetSteps(c))...)
			}
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if len(plan.Unplannable) > 0 {
		fmt.Fprint(w, "\nClusters that cannot be planned:\n\n")
		t := output.NewTable(w, multicluster.Lead(multi, multicluster.Column, "WAVE", "CLUSTER", "VERSION", "REASON")...)
		for _, u := range plan.Unplannable {
			t.Row(multicluster.Lead(multi, u.ManagementCluster, orDash(u.Wave), u.Namespace+"/"+u.Name, orDash(u.Version), u.Reason)...)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if n > 0 {
		fmt.Fprintf(w, "\nVersions vX.Y.x mean the newest patch of that minor. Workers follow the control plane at the target,\nor earlier when they would fall more than %d minors behind it.\n", fleetupgrade.MaxKubeletSkew)
	}
	if plan.SavedTo != "" {
		fmt.Fprintf(w, "\nPlan saved to %s (%s). Review it, then apply exactly it with:\n  capctl upgrade apply --plan %s\n", plan.SavedTo, plan.Digest, plan.SavedTo)
	}
	return nil
}

// fleetSteps is a cluster's upgrade path as "v1.31.x -> v1.32.x".
func fleetSteps(c fleetupgrade.ClusterUpgrade) string {
	if c.UpToDate {
		return "Already up to date"
	}
	parts := make([]string, 0, len(c.Steps))
	for _, s := range c.Steps {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, " -> ")
}

// orDash shows an empty cell as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// UpgradeApplyOptions is `capctl upgrade apply` parsed from its flags: Request is the one
// upgrade request.
type UpgradeApplyOptions struct {
	deps
	Request       upgrade.Request
	WaitProviders bool
	WaitTimeout   time.Duration
	DryRun        bool
	Output        output.Format
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
	rollout           fleetupgrade.Rollout
	maxParallel       string
	noWait            bool
	wave              int
	timeout           time.Duration
	core              string
	refs              map[provider.Type]*[]string
	waitSeconds       int
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkContextsFlags(cmd, o.Contexts); err != nil {
				return err
			}
			if o.Contexts.Enabled() && o.kubernetesVersion == "" {
				return usageErrorf("--contexts and --all-contexts upgrade the workload clusters of several management clusters: they need --kubernetes-version (provider upgrades run on one management cluster, chosen with --kubeconfig-context)")
			}
			fleet := o.kubernetesVersion != "" || o.plan != "" || cmd.Flags().Changed("wave") || cmd.Flags().Changed("timeout") || o.noWait
			for _, name := range rolloutFlagNames {
				fleet = fleet || cmd.Flags().Changed(name)
			}
			if fleet {
				if err := o.completeFleet(cmd); err != nil {
					return err
				}
			} else if err := checkFleetSelection(cmd, "", false); err != nil {
				return err
			} else if err := o.complete(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runUpgradeApply(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Request.Contract, "contract", "", "Upgrade every provider to the latest release of this contract (only v1beta2)")
	fl.StringVar(&o.core, "core", "", "Core provider to upgrade, as [namespace/]cluster-api:version")
	for _, t := range provider.Types[1:] {
		o.refs[t] = new([]string)
		fl.StringSliceVarP(o.refs[t], strings.TrimPrefix(t.Flag(), "--"), t.FlagShorthand(), nil, fmt.Sprintf("%s to upgrade, as [namespace/]name:version", t))
	}
	fl.BoolVar(&o.WaitProviders, "wait-providers", false, "Wait for the upgraded providers to be available")
	fl.IntVar(&o.waitSeconds, "wait-provider-timeout", 300, "Seconds to wait for each provider to be available (with --wait-providers)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "Show what would change (server-side dry run), change nothing")
	fl.StringVar(&o.kubernetesVersion, "kubernetes-version", "", "Upgrade the workload clusters' Kubernetes to this version (vX.Y.Z), wave by wave")
	fl.StringVar(&o.plan, "plan", "", "Apply exactly the plan saved by `upgrade plan --kubernetes-version ... --save` (it gives the version, the selection and the rollout)")
	fl.IntVar(&o.wave, "wave", 0, "With --kubernetes-version: only the clusters of this upgrade wave")
	addRolloutFlags(cmd, &o.rollout, &o.maxParallel)
	fl.BoolVar(&o.noWait, "no-wait", false, "With --window: outside the window, exit at once saying when it opens next, instead of waiting for it")
	fl.DurationVar(&o.timeout, "timeout", 30*time.Minute, "With --kubernetes-version or --plan: how long one cluster may take to reach the version")
	addFleetSelectionFlags(cmd, &o.selection, &o.AllNamespaces)
	// A saved plan is applied exactly: nothing may select or shape it again.
	for _, name := range append([]string{"kubernetes-version", "wave", "namespace", "all-namespaces", "selector", "contract", "core"}, rolloutFlagNames...) {
		cmd.MarkFlagsMutuallyExclusive("plan", name)
	}
	output.AddFormatFlag(cmd, &o.Output, "json and yaml print the result")
	addContextsFlags(cmd, &o.Contexts)
	return cmd
}

// completeFleet builds the fleet request of --kubernetes-version and checks it, before any
// cluster call.
func (o *UpgradeApplyOptions) completeFleet(cmd *cobra.Command) error {
	if o.plan != "" {
		if err := o.checkWorkloadOnly(cmd, "--plan"); err != nil {
			return err
		}
		o.Fleet = &fleetupgrade.FleetApplyRequest{Plan: o.plan, DryRun: o.DryRun, Timeout: o.timeout, NoWait: o.noWait}
		return nil
	}
	if o.kubernetesVersion == "" {
		return usageErrorf("--wave, --timeout and the rollout flags (--%s) need --kubernetes-version or --plan", strings.Join(rolloutFlagNames, ", --"))
	}
	v, _, err := versions.Kubernetes(o.kubernetesVersion)
	if err != nil {
		return usageError{err}
	}
	o.kubernetesVersion = v
	if err := checkFleetSelection(cmd, o.kubernetesVersion, o.AllNamespaces); err != nil {
		return err
	}
	if err := o.checkWorkloadOnly(cmd, "--kubernetes-version"); err != nil {
		return err
	}
	if err := o.rollout.SetMaxParallel(o.maxParallel); err != nil {
		return usageError{err}
	}
	sel := o.selection
	if cmd.Flags().Changed("wave") {
		w := o.wave
		sel.Wave = &w
	}
	o.Fleet = &fleetupgrade.FleetApplyRequest{
		KubernetesVersion: o.kubernetesVersion, Selection: sel, Rollout: o.rollout,
		DryRun: o.DryRun, Timeout: o.timeout, NoWait: o.noWait,
	}
	return nil
}

// rolloutFlagNames are the flags that say how a fleet's waves are rolled: given to
// `upgrade apply --kubernetes-version`, or to `upgrade plan --save` that saves them for --plan.
var rolloutFlagNames = []string{"max-parallel", "canary", "max-failures", "soak", "gate-command", "window"}

// addRolloutFlags adds the rollout flags, parsed into r (checked in pkg/upgrade); --max-parallel
// goes to maxParallel, for Rollout.SetMaxParallel.
func addRolloutFlags(cmd *cobra.Command, r *fleetupgrade.Rollout, maxParallel *string) {
	fl := cmd.Flags()
	fl.StringVar(maxParallel, "max-parallel", "1", "With --kubernetes-version: clusters of a wave upgraded at once, a number or a percentage of the wave (25%, rounded down, at least 1)")
	fl.IntVar(&r.Canary, "canary", 0, "With --kubernetes-version: make a first wave of this many clusters (the first by management cluster, namespace, name); only when no cluster has a wave label")
	fl.IntVar(&r.MaxFailures, "max-failures", 0, "With --kubernetes-version: how many clusters may fail before the rollout stops (0: the first failure stops it); each failure is reported")
	fl.DurationVar((*time.Duration)(&r.Soak), "soak", 0, "With --kubernetes-version: after each wave, watch its clusters this long (each must stay Available, no MachineHealthCheck remediation, no new diagnose finding), else stop")
	fl.StringVar(&r.GateCommand, "gate-command", "", "With --kubernetes-version: run this shell command after each wave and its soak (env CAPCTL_WAVE, CAPCTL_WAVE_INDEX, CAPCTL_WAVES, CAPCTL_CLUSTERS, CAPCTL_KUBERNETES_VERSION, CAPCTL_PLAN_DIGEST); a non-zero exit stops the rollout")
	fl.StringVar(&r.Window, "window", "", "With --kubernetes-version: start waves only in this window, like 'Sat,Sun 02:00-06:00 UTC' (days optional, a range may cross midnight, zone UTC or IANA)")
}

// checkWorkloadOnly refuses, with the fleet flag (--kubernetes-version or --plan), the flags of
// a provider upgrade, and a --timeout that is not positive.
func (o *UpgradeApplyOptions) checkWorkloadOnly(cmd *cobra.Command, flag string) error {
	if o.Request.Contract != "" || o.core != "" || cmd.Flags().Changed("wait-providers") {
		return usageErrorf("%s upgrades the workload clusters: it cannot be combined with --contract, provider flags or --wait-providers", flag)
	}
	for _, t := range provider.Types[1:] {
		if len(*o.refs[t]) > 0 {
			return usageErrorf("%s cannot be combined with %s", flag, t.Flag())
		}
	}
	if o.timeout <= 0 {
		return usageErrorf("--timeout must be positive, like 20m")
	}
	return nil
}

// addFleetSelectionFlags adds the flags that pick the clusters of a fleet plan or apply.
func addFleetSelectionFlags(cmd *cobra.Command, sel *fleetupgrade.FleetSelection, all *bool) {
	fl := cmd.Flags()
	fl.StringVarP(&sel.Namespace, "namespace", "n", "", "With --kubernetes-version: only the clusters of this namespace (default: every namespace)")
	fl.BoolVarP(all, "all-namespaces", "A", false, "With --kubernetes-version: the clusters of every namespace (the default)")
	fl.StringVarP(&sel.Selector, "selector", "l", "", "With --kubernetes-version: only the clusters matching this label selector")
}

// checkFleetSelection refuses selection flags without --kubernetes-version, and -n with -A.
func checkFleetSelection(cmd *cobra.Command, kubernetesVersion string, all bool) error {
	fl := cmd.Flags()
	if kubernetesVersion == "" {
		for _, name := range []string{"namespace", "all-namespaces", "selector"} {
			if fl.Changed(name) {
				return usageErrorf("--%s selects workload clusters: it needs --kubernetes-version", name)
			}
		}
		return nil
	}
	if all && fl.Changed("namespace") {
		return usageErrorf("--all-namespaces and --namespace cannot be used together")
	}
	return nil
}

// complete builds the upgrade request from the flags and checks it, before any cluster call.
func (o *UpgradeApplyOptions) complete() error {
	if o.waitSeconds <= 0 {
		return usageErrorf("--wait-provider-timeout must be a positive number of seconds")
	}
	o.WaitTimeout = time.Duration(o.waitSeconds) * time.Second
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
	flags := "--core, -b/--bootstrap, -c/--control-plane, -i/--infrastructure, --ipam, --runtime-extension, --addon"
	switch contract := o.Request.Contract; {
	case contract == "" && len(o.Request.Providers) == 0:
		return usageErrorf("either --contract or at least one of %s is required", flags)
	case contract != "" && len(o.Request.Providers) > 0:
		return usageErrorf("--contract cannot be combined with %s", flags)
	case contract != "" && contract != capi.Current:
		return usageErrorf("capctl can only upgrade to the %s contract, %s was requested", capi.Current, contract)
	}
	return nil
}

// parseUpgradeRef parses one [namespace/]name:version of a provider flag.
func parseUpgradeRef(t provider.Type, v string) (provider.Reference, error) {
	ref, err := provider.ParseReference(v, true)
	if err != nil {
		return ref, usageErrorf("%s: %v", t.Flag(), err)
	}
	if ref.Version == "" || ref.Version == "latest" {
		return ref, usageErrorf("%s %s: give the version to upgrade to, as [namespace/]name:version", t.Flag(), v)
	}
	if t == provider.CoreProviderType && ref.Name != provider.CoreProviderName {
		return ref, usageErrorf("--core %s: the core provider is %s", v, provider.CoreProviderName)
	}
	return ref, nil
}

// runUpgradeApply makes the one upgrade.Apply (or fleetupgrade.ApplyFleet) call and prints its result.
func runUpgradeApply(ctx context.Context, o *UpgradeApplyOptions) error {
	if o.Fleet != nil {
		return runFleetApply(ctx, o)
	}
	cat, err := o.catalog(ctx)
	if err != nil {
		return err
	}
	c, err := o.Cluster(ctx)
	if err != nil {
		return err
	}
	res, err := upgrade.Apply(ctx, c, cat, o.Request, upgrade.ApplyOptions{
		DryRun: o.DryRun, WaitProviders: o.WaitProviders, WaitTimeout: o.WaitTimeout, Log: o.Logger(),
	})
	if errors.Is(err, upgrade.ErrNothingToUpgrade) {
		fmt.Fprintln(o.IO.Out, "Nothing to upgrade: you are already up to date!")
		return nil
	}
	if res != nil {
		for _, w := range res.Warnings {
			fmt.Fprintf(o.IO.ErrOut, "Warning: the upgrade drops a change made on the running controller, re-apply it afterwards: %s\n", w)
		}
	}
	if err != nil {
		return err
	}
	return output.Render(o.IO.Out, o.Output, res, func(w io.Writer) error { renderApplyResult(w, res); return nil })
}

func renderApplyResult(w io.Writer, res *upgrade.ApplyResult) {
	if cm := res.CertManager; cm != nil {
		verb := "Upgraded"
		if res.DryRun {
			verb = "Would upgrade"
		}
		fmt.Fprintf(w, "%s cert-manager from %s to %s (%s)\n", verb, cm.From, cm.To, cm.Reason)
	}
	for _, p := range res.Providers {
		verb := "Upgraded"
		if res.DryRun {
			verb = "Would upgrade"
		}
		fmt.Fprintf(w, "%s %s (%s) from %s to %s: %d objects deleted, %d applied", verb, p.Provider.String(), p.Provider.Type, p.From, p.To, len(p.Deleted), len(p.Applied))
		if res.DryRun && len(p.Unchecked) > 0 {
			fmt.Fprintf(w, " (%d not checkable before their CRD or namespace exists)", len(p.Unchecked))
		}
		fmt.Fprintln(w)
		for _, d := range p.Dropped {
			fmt.Fprintf(w, "  - %s is not in %s and %s removed\n", d, p.To, map[bool]string{true: "would be", false: "was"}[res.DryRun])
		}
	}
	if res.DryRun {
		fmt.Fprintln(w, "Dry run: nothing was changed.")
	}
}

// runFleetApply rolls the workload clusters' Kubernetes version and prints the report; when it
// stops it prints the report and why, then how to continue.
func runFleetApply(ctx context.Context, o *UpgradeApplyOptions) error {
	req := *o.Fleet
	req.Progress = output.NewProgress(o.IO).Step
	var rep *fleetupgrade.FleetApplyReport
	if o.Contexts.Enabled() {
		members, err := o.Members(ctx, o.Contexts)
		if err != nil {
			return err
		}
		rep, err = fleetupgrade.ApplyFleetEach(ctx, members, req)
		return fleetApplyDone(o, rep, err)
	}
	c, err := o.Cluster(ctx)
	if err != nil {
		return err
	}
	rep, err = fleetupgrade.ApplyFleet(ctx, c, req)
	return fleetApplyDone(o, rep, err)
}

// fleetApplyDone prints the fleet apply's report and says how the run ended.
func fleetApplyDone(o *UpgradeApplyOptions, rep *fleetupgrade.FleetApplyReport, err error) error {
	if rep == nil {
		return err
	}
	if rerr := output.Render(o.IO.Out, o.Output, rep, func(w io.Writer) error { return renderFleetApply(w, rep) }); rerr != nil {
		return rerr
	}
	switch {
	case errors.Is(err, fleetupgrade.ErrFleetInterrupted):
		return fmt.Errorf("%w after the patch under way: run the same command again to continue from the clusters' state", err)
	case errors.Is(err, fleetupgrade.ErrFleetStopped) && rep.Stop != nil:
		s := rep.Stop
		return fmt.Errorf("%w %s (%s): %s (nothing was undone: each cluster is as the report shows; run the same command again to continue from their state)", err, s.At, s.Gate, s.Reason)
	case errors.Is(err, fleetupgrade.ErrFleetFailed):
		return fmt.Errorf("%w: %d cluster(s) failed (within --max-failures); fix them and run the same command again to finish them", err, len(rep.Failures))
	case errors.Is(err, fleetupgrade.ErrFleetStopped):
		f := rep.Failure
		return fmt.Errorf("%w at cluster %s, step %s: %s (clusters not started were left untouched; fix the cluster and run the same command again to continue)", err, f.Ref(), f.Step, f.Reason)
	}
	return err
}

// renderFleetPreflight prints what the preflight checked: the installed providers against the
// Kubernetes versions the upgrade sets, and what it could not check.
func renderFleetPreflight(w io.Writer, pf *fleetupgrade.FleetPreflight, multi bool) error {
	if pf == nil {
		return nil
	}
	if len(pf.Providers) > 0 {
		t := output.NewTable(w, multicluster.Lead(multi, multicluster.Column, "PROVIDER", "VERSION", "WORKLOAD KUBERNETES", "CHECK")...)
		for _, p := range pf.Providers {
			check := "supported"
			if p.Status == kubesupport.NotDeclared {
				check = "not declared: not checked"
			}
			t.Row(multicluster.Lead(multi, p.ManagementCluster, p.Namespace+"/"+p.Provider, p.Version, orDash(p.Range), check)...)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	for _, n := range pf.Notes {
		if !strings.HasPrefix(n, "provider ") { // the table shows those already
			fmt.Fprintf(w, "Not checked: %s\n", n)
		}
	}
	if pf.DryRunPatches > 0 {
		fmt.Fprintf(w, "Preflight: the API server accepted the first patch of %d cluster(s) (server-side dry run).\n\n", pf.DryRunPatches)
	}
	return nil
}

// renderFleetApply prints the preflight, one row per cluster, wave by wave, then why the run stopped.
func renderFleetApply(w io.Writer, rep *fleetupgrade.FleetApplyReport) error {
	multi := rep.ManagementClusters != nil
	if err := renderFleetPreflight(w, rep.Preflight, multi); err != nil {
		return err
	}
	if len(rep.Waves) == 0 {
		fmt.Fprintln(w, "There are no workload clusters to upgrade.")
		return nil
	}
	t := output.NewTable(w, multicluster.Lead(multi, multicluster.Column, "WAVE", "CLUSTER", "RESULT", "STEPS", "SECONDS")...)
	for _, wv := range rep.Waves {
		for _, c := range wv.Clusters {
			steps := make([]string, 0, len(c.Steps))
			for _, s := range c.Steps {
				st := fleetupgrade.UpgradeStep{Component: s.Component, Version: s.Version}.String()
				switch {
				case s.TopologyPlan && s.Done:
					st += fmt.Sprintf(" (topology plan, %.0fs)", s.Seconds)
				case s.TopologyPlan:
					st += " (topology plan)"
				case len(s.Patched) == 0:
					st += " (already set)"
				}
				steps = append(steps, st)
			}
			t.Row(multicluster.Lead(multi, c.ManagementCluster, wv.Wave, c.Namespace+"/"+c.Name, c.Result, orDash(strings.Join(steps, " -> ")), fmt.Sprintf("%.1f", c.Seconds))...)
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	for _, wv := range rep.Waves {
		started := false
		for _, c := range wv.Clusters {
			started = started || c.Result != fleetupgrade.ResultNotStarted
		}
		if !started {
			fmt.Fprintf(w, "Wave %s: not started\n", wv.Wave)
			continue
		}
		line := fmt.Sprintf("Wave %s: %.1fs", wv.Wave, wv.Seconds)
		for _, g := range wv.Gates {
			if g.Passed {
				line += fmt.Sprintf("; %s passed (%.0fs)", g.Gate, g.Seconds)
			} else {
				line += fmt.Sprintf("; %s did not pass: %s", g.Gate, g.Reason)
			}
		}
		fmt.Fprintln(w, line)
	}
	if rep.Failure == nil || len(rep.Failures) > 1 {
		for i, f := range rep.Failures {
			if i == 0 {
				fmt.Fprintln(w, "\nFailed clusters:")
			}
			fmt.Fprintf(w, "  - %s, step %s: %s\n", f.Ref(), f.Step, f.Reason)
		}
	}
	if f := rep.Failure; f != nil {
		fmt.Fprintf(w, "\nStopped at cluster %s, step %s: %s\n", f.Ref(), f.Step, f.Reason)
		if len(f.Pending) > 0 {
			fmt.Fprintln(w, "Not finished:")
			for _, p := range f.Pending {
				fmt.Fprintf(w, "  - %s\n", p)
			}
		}
		if len(f.Describe) > 0 {
			context := ""
			if f.ManagementCluster != "" {
				context = " --kubeconfig-context " + f.ManagementCluster
			}
			fmt.Fprintf(w, "\ncapctl describe cluster %s -n %s%s:\n", f.Name, f.Namespace, context)
			for _, l := range f.Describe {
				fmt.Fprintln(w, l)
			}
		}
	}
	if s := rep.Stop; s != nil {
		fmt.Fprintf(w, "\nStopped %s (%s): %s\n", s.At, s.Gate, s.Reason)
		for _, d := range s.Details {
			fmt.Fprintf(w, "  - %s\n", d)
		}
	}
	if rep.DryRun {
		fmt.Fprintln(w, "Dry run: nothing was changed (each cluster's first patch was checked by the API server).")
	}
	if rep.Record != "" {
		fmt.Fprintf(w, "Recorded as %s/%s: capctl upgrade history %s\n", fleetupgrade.AuditNamespace, rep.Record, rep.Record)
	}
	if multi {
		return multicluster.RenderSummary(w, multicluster.Summary{ManagementClusters: rep.ManagementClusters})
	}
	return nil
}
