package upgrade

import (
	"fmt"
	"io"

	"github.com/capctl/capctl/internal/output"
	capi "github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/multicluster"
)

// RenderPlan prints, per contract, a table of the providers' next versions and what to do.
func RenderPlan(w io.Writer, plan *ProviderPlan) error {
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
			fmt.Fprintf(w, "You can now apply the upgrade by executing the following command:\n\n%s\n", ApplyCommand(cp.Contract))
		}
	}
	return nil
}

// RenderPlanView prints every management cluster's provider plan as one table with a
// MANAGEMENT column, what each can do next, then the management clusters' table and the drift.
func RenderPlanView(w io.Writer, v *ProviderPlanView) error {
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
				fmt.Fprintf(w, "%s: %s --kubeconfig-context %s\n", m.Name, ApplyCommand(cp.Contract), m.Name)
			}
		}
	}
	return multicluster.RenderSummary(w, v.Summary)
}

// RenderApplyResult prints what the upgrade did (or would do, in a dry run), provider by provider.
func RenderApplyResult(w io.Writer, res *ApplyResult) error {
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
	return nil
}

// RenderWarnings prints the changes made on the running controllers that the upgrade drops
// (res may be nil: an upgrade that failed before it read them).
func RenderWarnings(w io.Writer, res *ApplyResult) {
	if res == nil {
		return
	}
	for _, warning := range res.Warnings {
		fmt.Fprintf(w, "Warning: the upgrade drops a change made on the running controller, re-apply it afterwards: %s\n", warning)
	}
}

// RenderNothingToUpgrade prints the answer to an upgrade that found every provider up to date
// (ErrNothingToUpgrade).
func RenderNothingToUpgrade(w io.Writer) error {
	_, err := fmt.Fprintln(w, "Nothing to upgrade: you are already up to date!")
	return err
}
