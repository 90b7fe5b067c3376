package move

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// PlanView is the -o json|yaml document of a dry run: the objects by owner level and by
// Cluster, what does not move, the unfinished moves, and what the target's versions need.
type PlanView struct {
	Source   string              `json:"source"`
	Objects  int                 `json:"objects"`
	Levels   [][]Ref             `json:"levels"`
	Clusters map[string][]string `json:"clusters"`
	Excluded []Exclusion         `json:"excluded,omitempty"`
	Warnings []string            `json:"warnings,omitempty"`
	Pending  []Unfinished        `json:"unfinished,omitempty"`
	// Contracts and Conversions: with --to-kubeconfig, what the target's versions need.
	Contracts   *Contracts   `json:"contracts,omitempty"`
	Conversions []Conversion `json:"conversions,omitempty"`
}

// noCluster groups the objects that belong to no Cluster.
const noCluster = "(no cluster)"

// NewPlanView is the dry-run view of res (its Plan may be nil: a dry run that found only
// unfinished moves).
func NewPlanView(res *Result) *PlanView {
	pv := &PlanView{Source: res.PlanSource, Clusters: map[string][]string{}, Pending: res.Pending, Conversions: res.Conversions}
	if res.Contracts.Target != "" {
		pv.Contracts = &res.Contracts
	}
	g := res.Plan
	if g == nil {
		return pv
	}
	pv.Objects, pv.Excluded, pv.Warnings = g.Count(), g.Excluded, g.Warnings
	for _, level := range g.Order {
		var refs []Ref
		for _, n := range level {
			refs = append(refs, n.Ref)
			group := n.Cluster
			if group == "" {
				group = noCluster
			}
			pv.Clusters[group] = append(pv.Clusters[group], n.Ref.String()+nodeNotes(n))
		}
		pv.Levels = append(pv.Levels, refs)
	}
	return pv
}

// RenderPlan prints a dry run: the unfinished moves, then the objects per Cluster, the order of
// the levels, the conversions and what does not move.
func RenderPlan(w io.Writer, res *Result) error {
	pv := NewPlanView(res)
	for _, p := range res.Pending {
		fmt.Fprintf(w, "Unfinished: %s (journal %s/%s).\n", p, p.Namespace, JournalName)
	}
	g := res.Plan
	if g == nil {
		return nil
	}
	fmt.Fprintf(w, "Dry run: %d objects would move from %s, in %d levels (nothing was written).\n", pv.Objects, pv.Source, len(pv.Levels))
	var groups []string
	for k := range pv.Clusters {
		groups = append(groups, k)
	}
	sort.Strings(groups)
	for _, k := range groups {
		title := "Cluster " + k
		if k == noCluster {
			title = "Not part of a cluster"
		}
		fmt.Fprintf(w, "\n%s (%d objects):\n", title, len(pv.Clusters[k]))
		for _, line := range pv.Clusters[k] {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	fmt.Fprintf(w, "\nOrder (owners first; objects of one level are created together):\n")
	for i, level := range pv.Levels {
		counts := map[string]int{}
		for _, r := range level {
			counts[r.Kind]++
		}
		var kinds []string
		for k, c := range counts {
			kinds = append(kinds, fmt.Sprintf("%s×%d", k, c))
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "  %d. %s\n", i+1, strings.Join(kinds, ", "))
	}
	WriteConversions(w, res.Contracts, res.Conversions)
	writeExcluded(w, g.Excluded, g.Warnings)
	return nil
}

// nodeNotes is what the dry run says about a node beside its name: global, kept in the
// source, paused by its user.
func nodeNotes(n *Node) string {
	var f []string
	if n.Global {
		f = append(f, "global: created if absent, never deleted")
	}
	if n.KeepInSource {
		f = append(f, "copied, kept in the source")
	}
	if n.UserPaused {
		f = append(f, "paused by its user: stays paused")
	}
	if len(f) == 0 {
		return ""
	}
	return " [" + strings.Join(f, "; ") + "]"
}

// ReportText is the text view of the report of a move, backup (ToDirectory) or restore
// (FromDirectory).
type ReportText struct {
	Result                     *Result
	FromDirectory, ToDirectory bool
	// Err is what the run returned: the counts are printed only for a run that succeeded.
	Err error
}

// WriteText prints what the run did (counts, resume, kept and paused objects, verification),
// the contract jump and accepted losses, the settle check, and what did not move.
func (v ReportText) WriteText(w io.Writer) error {
	res, rep := v.Result, v.Result.Report
	if v.Err == nil {
		var headline string
		// The counts are what this run did, not what it planned.
		n := rep.Created + rep.Updated + rep.AlreadyPresent
		switch {
		case v.FromDirectory:
			headline = fmt.Sprintf("Restored %d objects from %s into %s", n, res.Source, res.Target)
		case v.ToDirectory:
			headline = fmt.Sprintf("Wrote %d objects from %s (%s) to %s", rep.Written, res.Source, rep.Scope, res.Target)
		default:
			headline = fmt.Sprintf("Moved %d objects from %s to %s", n, res.Source, res.Target)
		}
		fmt.Fprintf(w, "%s in %.1fs (%d Clusters, %d ClusterClasses; API requests: source %d, target %d).\n",
			headline, rep.Seconds, len(rep.Clusters), len(rep.ClusterClasses), rep.SourceRequests, rep.TargetRequests)
		if !v.ToDirectory && (rep.Updated > 0 || rep.AlreadyPresent > 0) {
			fmt.Fprintf(w, "In the target: %d created, %d brought back to their pre-move copy, %d already there as they should be.\n", rep.Created, rep.Updated, rep.AlreadyPresent)
		}
		if !v.ToDirectory && !v.FromDirectory {
			fmt.Fprintf(w, "Deleted from the source: %d", rep.Deleted)
			if rep.AlreadyDeleted > 0 {
				fmt.Fprintf(w, " (and %d an earlier run had deleted)", rep.AlreadyDeleted)
			}
			fmt.Fprintln(w, ".")
		}
		if rep.Resumed {
			fmt.Fprintf(w, "This run finished the unfinished move %s.\n", rep.MoveID)
		}
		if rep.KeptInSource > 0 && !v.FromDirectory {
			fmt.Fprintf(w, "%d objects were copied and kept in the source (shared ClusterClasses and their templates, global objects).\n", rep.KeptInSource)
		}
		if len(rep.UserPaused) > 0 {
			fmt.Fprintf(w, "Still paused, as their users left them: %s\n", strings.Join(rep.UserPaused, ", "))
		}
		if rep.Verified {
			fmt.Fprintf(w, "Verified: before anything was deleted, the target held the same %d objects as the source before the move (kinds, names, labels, annotations, finalizers, owners, spec, data).\n", rep.Objects)
		}
	}
	if rep.Contracts.Jump() {
		fmt.Fprintf(w, "Contract %s: %d objects converted to the target's versions.\n", rep.Contracts, len(rep.Conversions))
		for _, l := range Lost(rep.Conversions) {
			fmt.Fprintf(w, "  lost (accepted): %s\n", l)
		}
	}
	if rep.Settle != nil {
		WriteSettle(w, rep.Settle)
	}
	writeExcluded(w, rep.Excluded, rep.Warnings)
	return nil
}

// WriteDifferences prints how the target differs from the objects as they were before the
// move (on stderr, after the report); nothing when it does not.
func (rep *Report) WriteDifferences(w io.Writer) error {
	if len(rep.Differences) == 0 {
		return nil
	}
	fmt.Fprintf(w, "The target differs from the objects as they were before the move:\n")
	for _, d := range rep.Differences {
		if _, err := fmt.Fprintf(w, "  %s: %s\n", d.Object, d.Problem); err != nil {
			return err
		}
	}
	return nil
}

// writeExcluded prints what does not move and why, then the warnings.
func writeExcluded(w io.Writer, excluded []Exclusion, warnings []string) {
	if len(excluded) > 0 {
		fmt.Fprintf(w, "Not moved (%d):\n", len(excluded))
		for _, e := range excluded {
			fmt.Fprintf(w, "  %s: %s\n", e.Object, e.Reason)
		}
	}
	for _, warn := range warnings {
		fmt.Fprintf(w, "Warning: %s\n", warn)
	}
}
