package topology

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/topologyengine"
)

// RenderText prints the fleet summary (one row per cluster), then each cluster's details.
func RenderText(w io.Writer, r *PlanResult) error {
	several := len(r.ManagementClusters) > 0
	if len(r.Clusters) == 0 {
		fmt.Fprintln(w, "No cluster is reached by the change.")
	} else {
		t := output.NewTable(w, multicluster.Lead(several, "MANAGEMENT", "NAMESPACE", "NAME", "CLASS", "CONTROL PLANE", "MACHINEDEPLOYMENTS", "CHANGES", "NOTES")...)
		for _, c := range r.Clusters {
			t.Row(multicluster.Lead(several, c.ManagementCluster, c.Namespace, c.Name, c.Class, cpCell(c), mdCell(c), strconv.Itoa(len(c.Changes)), noteCell(c))...)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	for _, c := range r.Clusters {
		if len(c.Changes) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nCluster %s/%s", c.Namespace, c.Name)
		if c.ManagementCluster != "" {
			fmt.Fprintf(w, " (%s)", c.ManagementCluster)
		}
		fmt.Fprintln(w, ":")
		if c.ControlPlane.Reason != "" {
			fmt.Fprintf(w, "  control plane %s: %s\n", rollWord(c.ControlPlane.RollsOut), c.ControlPlane.Reason)
		}
		for _, md := range c.MachineDeployments {
			if md.Reason != "" {
				fmt.Fprintf(w, "  MachineDeployment %s %s: %s\n", md.Name, rollWord(md.RollsOut), md.Reason)
			}
		}
		for _, mp := range c.MachinePools {
			if mp.Reason != "" {
				fmt.Fprintf(w, "  MachinePool %s %s: %s\n", mp.Name, rollWord(mp.RollsOut), mp.Reason)
			}
		}
		if len(c.UpgradePlan) > 0 {
			fmt.Fprintf(w, "  upgrade plan: %s\n", strings.Join(c.UpgradePlan, " → "))
		}
		if len(c.WorkersUpgradePlan) > 0 {
			fmt.Fprintf(w, "  workers' upgrade plan: %s\n", strings.Join(c.WorkersUpgradePlan, " → "))
		}
		for _, ch := range c.Changes {
			fmt.Fprintf(w, "  %-6s %s %s", ch.Action, ch.Kind, ch.Name)
			switch {
			case len(ch.Fields) > 0:
				fmt.Fprintf(w, ": %s", strings.Join(ch.Fields, ", "))
			case ch.Action == topologyengine.Update:
				fmt.Fprint(w, " (field ownership only)")
			}
			fmt.Fprintln(w)
			if ch.Diff != "" {
				for _, l := range strings.Split(strings.TrimRight(ch.Diff, "\n"), "\n") {
					fmt.Fprintf(w, "      %s\n", l)
				}
			}
		}
	}
	if r.SavedTo != "" {
		fmt.Fprintf(w, "\nPlan saved to %s.\n", r.SavedTo)
	}
	if len(r.ManagementClusters) > 0 {
		fmt.Fprintln(w)
		return multicluster.RenderManagement(w, r.ManagementClusters)
	}
	return nil
}

func rollWord(rolls bool) string {
	if rolls {
		return "rolls out"
	}
	return "in place"
}

func cpCell(c ClusterPlan) string {
	switch {
	case c.Refused != "" || c.Partial != "":
		return "-"
	case c.ControlPlane.RollsOut:
		return "rolls out"
	case c.ControlPlane.Reason != "":
		return "in place"
	}
	return "unchanged"
}

func mdCell(c ClusterPlan) string {
	if c.Refused != "" || c.Partial != "" {
		return "-"
	}
	return fmt.Sprintf("%d/%d roll out", rolling(c.MachineDeployments), len(c.MachineDeployments))
}

func rolling(rs []topologyengine.Rollout) int {
	n := 0
	for _, r := range rs {
		if r.RollsOut {
			n++
		}
	}
	return n
}

func noteCell(c ClusterPlan) string {
	switch {
	case c.Refused != "":
		return "refused: " + c.Refused
	case c.Partial != "":
		return "partial: " + c.Partial
	}
	return ""
}
