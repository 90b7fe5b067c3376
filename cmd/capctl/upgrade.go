package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/pkg/repository"
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
	cmd.AddCommand(newUpgradePlanCmd(f))
	return cmd
}

type upgradePlanOptions struct {
	kubernetesVersion string
	output            string
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
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Output format: table (default), json or yaml")
	return cmd
}

func (o *upgradePlanOptions) validate() error {
	switch o.output {
	case "", "table", "json", "yaml":
	default:
		return usageErrorf("invalid output format %q: use one of table, json, yaml", o.output)
	}
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
	return renderStructured(f.IO.Out, o.output, plan, func(w io.Writer) { renderFleetPlan(w, plan) })
}

// upgradeCatalog builds the repository client of the configured providers.
func upgradeCatalog(cmd *cobra.Command, f *factory) (upgrade.RepositoryCatalog, error) {
	cfg, err := f.Config(cmd.Context())
	if err != nil {
		return upgrade.RepositoryCatalog{}, err
	}
	rc, err := repository.New(cfg, repository.Options{Logger: f.Logger()})
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
	return renderStructured(f.IO.Out, o.output, plan, func(w io.Writer) { renderProviderPlan(w, plan) })
}

func renderProviderPlan(w io.Writer, plan *upgrade.ProviderPlan) {
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

// renderStructured prints v as JSON or YAML, or calls table.
func renderStructured(w io.Writer, format string, v any, table func(io.Writer)) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	table(w)
	return nil
}

// writePlainTable prints a borderless, kubectl-like table (no trailing blanks).
func writePlainTable(w io.Writer, header []string, rows [][]string) {
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "   ", Overwrite: true}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header(header)
	for _, r := range rows {
		_ = t.Append(r)
	}
	_ = t.Render()
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
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
