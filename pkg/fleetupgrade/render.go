package fleetupgrade

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/kubesupport"
	"github.com/capctl/capctl/pkg/multicluster"
)

// RenderPlan prints the clusters wave by wave, then those that cannot be planned.
func RenderPlan(w io.Writer, plan *FleetPlan) error {
	return renderPlanRows(w, plan, false)
}

// RenderPlanView prints the plan over several management clusters (a MANAGEMENT column),
// then the management clusters' table.
func RenderPlanView(w io.Writer, v *FleetPlanView) error {
	if err := renderPlanRows(w, &v.FleetPlan, true); err != nil {
		return err
	}
	return multicluster.RenderSummary(w, v.Summary)
}

// renderPlanRows prints the plan, with the MANAGEMENT column when multi.
func renderPlanRows(w io.Writer, plan *FleetPlan, multi bool) error {
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
				t.Row(multicluster.Lead(multi, c.ManagementCluster, wv.Name(), c.Namespace+"/"+c.Name, orDash(c.ClusterClass), c.ControlPlaneVersion, c.WorkersVersion, planSteps(c))...)
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
		fmt.Fprintf(w, "\nVersions vX.Y.x mean the newest patch of that minor. Workers follow the control plane at the target,\nor earlier when they would fall more than %d minors behind it.\n", MaxKubeletSkew)
	}
	if plan.SavedTo != "" {
		fmt.Fprintf(w, "\nPlan saved to %s (%s). Review it, then apply exactly it with:\n  capctl upgrade apply --plan %s\n", plan.SavedTo, plan.Digest, plan.SavedTo)
	}
	return nil
}

// planSteps is a cluster's upgrade path as "v1.31.x -> v1.32.x".
func planSteps(c ClusterUpgrade) string {
	if c.UpToDate {
		return "Already up to date"
	}
	parts := make([]string, 0, len(c.Steps))
	for _, s := range c.Steps {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, " -> ")
}

// renderPreflight prints what the preflight checked: the installed providers against the
// Kubernetes versions the upgrade sets, and what it could not check.
func renderPreflight(w io.Writer, pf *FleetPreflight, multi bool) error {
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

// RenderApplyReport prints the preflight, one row per cluster, wave by wave, then why the run stopped.
func RenderApplyReport(w io.Writer, rep *FleetApplyReport) error {
	multi := rep.ManagementClusters != nil
	if err := renderPreflight(w, rep.Preflight, multi); err != nil {
		return err
	}
	if len(rep.Waves) == 0 {
		fmt.Fprintln(w, "There are no workload clusters to change.")
		return nil
	}
	t := output.NewTable(w, multicluster.Lead(multi, multicluster.Column, "WAVE", "CLUSTER", "RESULT", "STEPS", "SECONDS")...)
	for _, wv := range rep.Waves {
		for _, c := range wv.Clusters {
			steps := make([]string, 0, len(c.Steps))
			for _, s := range c.Steps {
				st := UpgradeStep{Component: s.Component, Version: s.Version}.String()
				switch {
				case s.TopologyPlan && s.Done:
					st += fmt.Sprintf(" (topology plan, %.0fs)", s.Seconds)
				case s.TopologyPlan:
					st += " (topology plan)"
				case len(s.Patched) == 0:
					st += " (already set)"
				case s.PredictionHeld != nil && *s.PredictionHeld:
					st += " (replaced " + orNone(strings.Join(s.Replaced, ", ")) + ", as planned)"
				case s.PredictionHeld != nil:
					st += " (replaced " + orNone(strings.Join(s.Replaced, ", ")) + "; the plan said " + orNone(strings.Join(s.Predicted, ", ")) + ")"
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
			started = started || c.Result != ResultNotStarted
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
		fmt.Fprintf(w, "Recorded as %s/%s: capctl upgrade history %s\n", AuditNamespace, rep.Record, rep.Record)
	}
	if multi {
		return multicluster.RenderSummary(w, multicluster.Summary{ManagementClusters: rep.ManagementClusters})
	}
	return nil
}

// EndError is the error a fleet apply ends with, after its report was printed: err (from
// ApplyFleet or applyFleetEach) with where the run stopped and how to continue.
func EndError(rep *FleetApplyReport, err error) error {
	again := "run the same command again"
	if rep.RolloutAfter != "" {
		// A rotation resumes at its own time: a new one would replace the replaced Machines again.
		again = "run the same command again with --rollout-after " + rep.RolloutAfter
	}
	switch {
	case errors.Is(err, ErrFleetInterrupted):
		return fmt.Errorf("%w after the patch under way: %s to continue from the clusters' state", err, again)
	case errors.Is(err, ErrFleetStopped) && rep.Stop != nil:
		s := rep.Stop
		return fmt.Errorf("%w %s (%s): %s (nothing was undone: each cluster is as the report shows; %s to continue from their state)", err, s.At, s.Gate, s.Reason, again)
	case errors.Is(err, ErrFleetFailed):
		return fmt.Errorf("%w: %d cluster(s) failed (within --max-failures); fix them and %s to finish them", err, len(rep.Failures), again)
	case errors.Is(err, ErrFleetStopped):
		f := rep.Failure
		return fmt.Errorf("%w at cluster %s, step %s: %s (clusters not started were left untouched; fix the cluster and %s to continue)", err, f.Ref(), f.Step, f.Reason, again)
	}
	return err
}
