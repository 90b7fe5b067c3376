package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/upgrade"
)

func init() { registerCommand(newUpgradeCmd) }

func newUpgradeCmd(f *factory) *cobra.Command {
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
	cmd.AddCommand(newUpgradePlanCmd(f), newUpgradeApplyCmd(f))
	return cmd
}

type upgradePlanOptions struct {
	kubernetesVersion string
	output            output.Format
}

func newUpgradePlanCmd(f *factory) *cobra.Command {
	o := &upgradePlanOptions{}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show the upgrades available to the providers, or the fleet's Kubernetes upgrade path",
		Long: strings.TrimSpace(`
Show the upgrades available to the providers of the management cluster.

With --kubernetes-version, show instead how every workload cluster gets to that Kubernetes
version: minor by minor (Kubernetes cannot skip a minor), the control plane before the workers
(workers follow at the target, or earlier when they would fall more than 3 minors behind the
control plane), clusters grouped and ordered by their upgrade wave, the value of the label
` + upgrade.WaveLabel + ` (or ` + upgrade.PlainWaveLabel + `), lowest first, clusters without
the label last. Clusters that cannot be planned are listed with the reason.`),
		Example: strings.TrimSpace(`
  capctl upgrade plan --kubernetes-version v1.33.2
  capctl upgrade plan --kubernetes-version v1.33.2 -o json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			if o.kubernetesVersion == "" {
				return o.runProviders(cmd, f)
			}
			return o.runFleet(cmd, f)
		},
	}
	cmd.Flags().StringVar(&o.kubernetesVersion, "kubernetes-version", "", "Plan the Kubernetes upgrade of every workload cluster to this version (vX.Y.Z)")
	output.AddFormatFlag(cmd, &o.output, "json and yaml print the plan")
	return cmd
}

func (o *upgradePlanOptions) validate() error {
	if o.kubernetesVersion != "" {
		if _, err := upgrade.ParseKubernetesVersion(o.kubernetesVersion); err != nil {
			return usageError{err}
		}
	}
	return nil
}

func (o *upgradePlanOptions) runFleet(cmd *cobra.Command, f *factory) error {
	ctx := cmd.Context()
	c, err := f.Cluster(ctx)
	if err != nil {
		return err
	}
	plan, err := upgrade.PlanFleet(ctx, c, c.Mapper, o.kubernetesVersion)
	if err != nil {
		return err
	}
	return output.Render(f.IO.Out, o.output, plan, func(w io.Writer) error { renderFleetPlan(w, plan); return nil })
}

// upgradeCatalog builds the repository client of the configured providers.
func upgradeCatalog(cmd *cobra.Command, f *factory) (upgrade.RepositoryCatalog, error) {
	rc, err := f.repositoryClient(cmd.Context(), false)
	if err != nil {
		return upgrade.RepositoryCatalog{}, err
	}
	return upgrade.RepositoryCatalog{Client: rc}, nil
}

func (o *upgradePlanOptions) runProviders(cmd *cobra.Command, f *factory) error {
	ctx := cmd.Context()
	cat, err := upgradeCatalog(cmd, f)
	if err != nil {
		return err
	}
	c, err := f.Cluster(ctx)
	if err != nil {
		return err
	}
	f.Logger().Info("Checking new release availability...")
	plan, err := upgrade.Plan(ctx, c, cat)
	if err != nil {
		return err
	}
	return output.Render(f.IO.Out, o.output, plan, func(w io.Writer) error { renderProviderPlan(w, plan); return nil })
}

func renderProviderPlan(w io.Writer, plan *upgrade.ProviderPlan) {
	if cm := plan.CertManager; cm != nil {
		if cm.ShouldUpgrade {
			fmt.Fprintf(w, "Cert-Manager will be upgraded from %q to %q\n\n", cm.From, cm.To)
		} else {
			fmt.Fprintf(w, "Cert-Manager is already up to date\n\n")
		}
	}
	fmt.Fprintf(w, "Management group: %s\n", plan.ManagementGroup)
	for _, cp := range plan.Contracts {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Latest release available for the %s Cluster API contract version:\n\n", cp.Contract)
		var rows [][]string
		for _, p := range cp.Providers {
			next, contract := p.NextVersion, p.NextContract
			if next == "" {
				next, contract = "Already up to date", p.CurrentContract
			}
			rows = append(rows, []string{p.Name, p.Namespace, string(p.Type), p.CurrentVersion, next, contract})
		}
		writePlainTable(w, []string{"NAME", "NAMESPACE", "TYPE", "CURRENT VERSION", "NEXT VERSION", "CONTRACT"}, rows)
		fmt.Fprintln(w)
		switch {
		case cp.UpToDate():
			fmt.Fprintln(w, "You are already up to date!")
		case len(cp.Blocked) > 0:
			fmt.Fprintf(w, "The upgrade to the %s contract is blocked: %s %s no release for it.\n", cp.Contract, cp.BlockedNames(), map[bool]string{true: "has", false: "have"}[len(cp.Blocked) == 1])
		case !cp.Supported:
			fmt.Fprintf(w, "The current version of capctl could not upgrade to the %s contract (only %s supported).\n", cp.Contract, upgrade.CurrentContract)
		default:
			fmt.Fprintf(w, "You can now apply the upgrade by executing the following command:\n\n%s\n", upgrade.ApplyCommand(cp.Contract))
		}
	}
}

func renderFleetPlan(w io.Writer, plan *upgrade.FleetPlan) {
	n := 0
	for _, wv := range plan.Waves {
		n += len(wv.Clusters)
	}
	if n == 0 && len(plan.Unplannable) == 0 {
		fmt.Fprintln(w, "There are no workload clusters in the management cluster.")
		return
	}
	fmt.Fprintf(w, "Kubernetes upgrade plan to %s: %d cluster(s) in %d wave(s), %d cannot be planned.\n", plan.KubernetesVersion, n, len(plan.Waves), len(plan.Unplannable))
	if n > 0 {
		fmt.Fprintln(w)
		var rows [][]string
		for _, wv := range plan.Waves {
			for _, c := range wv.Clusters {
				steps := "Already up to date"
				if !c.UpToDate {
					parts := make([]string, 0, len(c.Steps))
					for _, s := range c.Steps {
						parts = append(parts, s.String())
					}
					steps = strings.Join(parts, " -> ")
				}
				class := c.ClusterClass
				if class == "" {
					class = "-"
				}
				rows = append(rows, []string{wv.Name(), c.Namespace + "/" + c.Name, class, c.ControlPlaneVersion, c.WorkersVersion, steps})
			}
		}
		writePlainTable(w, []string{"WAVE", "CLUSTER", "CLUSTERCLASS", "CONTROL PLANE", "WORKERS", "STEPS"}, rows)
	}
	if len(plan.Unplannable) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Clusters that cannot be planned:")
		fmt.Fprintln(w)
		var rows [][]string
		for _, u := range plan.Unplannable {
			wave, v := u.Wave, u.Version
			if wave == "" {
				wave = "-"
			}
			if v == "" {
				v = "-"
			}
			rows = append(rows, []string{wave, u.Namespace + "/" + u.Name, v, u.Reason})
		}
		writePlainTable(w, []string{"WAVE", "CLUSTER", "VERSION", "REASON"}, rows)
	}
	if n > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Versions vX.Y.x mean the newest patch of that minor. Workers follow the control plane at the target,\nor earlier when they would fall more than %d minors behind it.\n", upgrade.MaxKubeletSkew)
	}
}

type upgradeApplyOptions struct {
	contract          string
	core              string
	bootstrap         []string
	controlPlane      []string
	infrastructure    []string
	ipam              []string
	runtimeExtension  []string
	addon             []string
	waitProviders     bool
	waitTimeoutSecond int
	dryRun            bool
	output            output.Format

	req upgrade.Request
}

func newUpgradeApplyCmd(f *factory) *cobra.Command {
	o := &upgradeApplyOptions{}
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Upgrade the providers of the management cluster",
		Long: strings.TrimSpace(`
Upgrade the providers of the management cluster: to the latest releases of a contract
(--contract v1beta2, as "capctl upgrade plan" shows), or to the versions given per provider.

Every input is checked before anything changes: the providers must be installed, the versions
must be published releases of their repositories, no downgrade, no skip of more than 3 minors
for cluster-api and the kubeadm providers, and one contract (v1beta2) that every provider works
with. Then the old controllers are scaled to zero, and per provider the old components are deleted
(CRDs, the namespace and the inventory entry are kept), the new ones applied (CRDs updated in
place) and the inventory updated.

Container args and env that were changed on the running controllers and that the new components
do not carry are listed as warnings: the upgrade drops them, re-apply them afterwards.`),
		Example: strings.TrimSpace(`
  capctl upgrade apply --contract v1beta2
  capctl upgrade apply --core capi-system/cluster-api:v1.14.0 -i capd-system/docker:v1.14.0
  capctl upgrade apply --contract v1beta2 --dry-run`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.contract, "contract", "", "Upgrade every provider to the latest release of this contract (only v1beta2)")
	fl.StringVar(&o.core, "core", "", "Core provider to upgrade, as [namespace/]cluster-api:version")
	fl.StringSliceVarP(&o.bootstrap, "bootstrap", "b", nil, "Bootstrap providers to upgrade, as [namespace/]name:version")
	fl.StringSliceVarP(&o.controlPlane, "control-plane", "c", nil, "Control plane providers to upgrade, as [namespace/]name:version")
	fl.StringSliceVarP(&o.infrastructure, "infrastructure", "i", nil, "Infrastructure providers to upgrade, as [namespace/]name:version")
	fl.StringSliceVar(&o.ipam, "ipam", nil, "IPAM providers to upgrade, as [namespace/]name:version")
	fl.StringSliceVar(&o.runtimeExtension, "runtime-extension", nil, "Runtime extension providers to upgrade, as [namespace/]name:version")
	fl.StringSliceVar(&o.addon, "addon", nil, "Add-on providers to upgrade, as [namespace/]name:version")
	fl.BoolVar(&o.waitProviders, "wait-providers", false, "Wait for the upgraded providers to be available")
	fl.IntVar(&o.waitTimeoutSecond, "wait-provider-timeout", 300, "Seconds to wait for each provider to be available (with --wait-providers)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "Show what would change (server-side dry run), change nothing")
	output.AddFormatFlag(cmd, &o.output, "json and yaml print the result")
	return cmd
}

func (o *upgradeApplyOptions) validate() error {
	if o.waitTimeoutSecond <= 0 {
		return usageErrorf("--wait-provider-timeout must be a positive number of seconds")
	}
	type group struct {
		t    provider.Type
		vals []string
	}
	groups := []group{
		{provider.BootstrapProviderType, o.bootstrap}, {provider.ControlPlaneProviderType, o.controlPlane},
		{provider.InfrastructureProviderType, o.infrastructure}, {provider.IPAMProviderType, o.ipam},
		{provider.RuntimeExtensionProviderType, o.runtimeExtension}, {provider.AddonProviderType, o.addon},
	}
	if o.core != "" {
		groups = append([]group{{provider.CoreProviderType, []string{o.core}}}, groups...)
	}
	o.req = upgrade.Request{Contract: o.contract}
	for _, g := range groups {
		for _, v := range g.vals {
			ref, err := provider.ParseReference(v, true)
			if err != nil {
				return usageErrorf("%s: %v", g.t.Flag(), err)
			}
			if ref.Version == "" || ref.Version == "latest" {
				return usageErrorf("%s %s: give the version to upgrade to, as [namespace/]name:version", g.t.Flag(), v)
			}
			if g.t == provider.CoreProviderType && ref.Name != provider.CoreProviderName {
				return usageErrorf("--core %s: the core provider is %s", v, provider.CoreProviderName)
			}
			o.req.Providers = append(o.req.Providers, upgrade.Requested{Type: g.t, Ref: ref})
		}
	}
	flags := "--core, -b/--bootstrap, -c/--control-plane, -i/--infrastructure, --ipam, --runtime-extension, --addon"
	switch {
	case o.contract == "" && len(o.req.Providers) == 0:
		return usageErrorf("either --contract or at least one of %s is required", flags)
	case o.contract != "" && len(o.req.Providers) > 0:
		return usageErrorf("--contract cannot be combined with %s", flags)
	case o.contract != "" && o.contract != upgrade.CurrentContract:
		return usageErrorf("capctl can only upgrade to the %s contract, %s was requested", upgrade.CurrentContract, o.contract)
	}
	return nil
}

func (o *upgradeApplyOptions) run(cmd *cobra.Command, f *factory) error {
	ctx := cmd.Context()
	cat, err := upgradeCatalog(cmd, f)
	if err != nil {
		return err
	}
	c, err := f.Cluster(ctx)
	if err != nil {
		return err
	}
	log := f.Logger()
	res, err := upgrade.Apply(ctx, c, cat, o.req, upgrade.ApplyOptions{
		DryRun: o.dryRun, WaitProviders: o.waitProviders,
		WaitTimeout: time.Duration(o.waitTimeoutSecond) * time.Second, Log: log,
	})
	if errors.Is(err, upgrade.ErrNothingToUpgrade) {
		fmt.Fprintln(f.IO.Out, "Nothing to upgrade: you are already up to date!")
		return nil
	}
	if res != nil {
		for _, w := range res.Warnings {
			fmt.Fprintf(f.IO.ErrOut, "Warning: the upgrade drops a change made on the running controller, re-apply it afterwards: %s\n", w)
		}
	}
	if err != nil {
		return err
	}
	return output.Render(f.IO.Out, o.output, res, func(w io.Writer) error { renderApplyResult(w, res); return nil })
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
