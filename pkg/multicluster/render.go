package multicluster

import (
	"fmt"
	"io"

	"github.com/capctl/capctl/internal/output"
)

// Column is the first column of every table over several management clusters: the context.
const Column = "MANAGEMENT"

// Lead puts the MANAGEMENT cell (or header) before a row's cells when the view spans several
// management clusters (on), and leaves the row as it is otherwise, so single-context tables do
// not change.
func Lead(on bool, lead string, cells ...string) []string {
	if !on {
		return cells
	}
	return append([]string{lead}, cells...)
}

// RenderManagement prints one row per management cluster: whether it was read, its contract,
// how many providers and clusters it has and how many with problems, or why it was not read.
func RenderManagement(w io.Writer, ms []ManagementCluster) error {
	t := output.NewTable(w, Column, "STATUS", "CONTRACT", "PROVIDERS", "CLUSTERS", "PROBLEMS", "REASON")
	for _, m := range ms {
		status, clusters, problems := "ok", fmt.Sprint(m.Clusters), fmt.Sprint(m.Problems)
		switch {
		case !m.Reachable:
			status, clusters, problems = "unreachable", "-", "-"
		case m.Error != "":
			status, clusters, problems = "not read", "-", "-"
		}
		contract := m.Contract
		if contract == "" {
			contract = "-"
		}
		providers := "-"
		if m.Reachable && len(m.Providers) > 0 {
			providers = fmt.Sprint(len(m.Providers))
		}
		t.Row(m.Name, status, contract, providers, clusters, problems, m.Error)
	}
	return t.Flush()
}

// RenderDrift prints one line per provider that differs between management clusters.
func RenderDrift(w io.Writer, drift []Drift) error {
	if len(drift) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w, "\nProvider versions differ between management clusters:"); err != nil {
		return err
	}
	for _, d := range drift {
		if _, err := fmt.Fprintf(w, "  - %s\n", d.Summary); err != nil {
			return err
		}
	}
	return nil
}

// RenderSummary prints the management clusters' table after a blank line, then the drift.
func RenderSummary(w io.Writer, s Summary) error {
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	if err := RenderManagement(w, s.ManagementClusters); err != nil {
		return err
	}
	return RenderDrift(w, s.Drift)
}
