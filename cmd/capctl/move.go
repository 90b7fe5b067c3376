package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/move"
)

func init() { registerCommand(newMoveCmd) }

type moveOptions struct {
	toKubeconfig     string
	toContext        string
	namespace        string
	allNamespaces    bool
	clusters         []string
	dryRun           bool
	toDirectory      string
	fromDirectory    string
	resume           bool
	blockMoveTimeout time.Duration
	parallelism      int
	output           string
}

func newMoveCmd(f *factory) *cobra.Command {
	o := &moveOptions{}
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "move",
		Short:   "Move Cluster API objects to another management cluster, or to/from a directory",
		Long: strings.TrimSpace(`
Move Cluster API objects and all their dependencies between management clusters, or back them up
to a directory and restore them.

capctl pauses the Clusters and ClusterClasses it moves, creates every object in the target (owners
first), deletes from the source only once every object exists in the target, then unpauses in the
target and verifies that the target holds the same graph. A move that fails before deleting leaves
the source intact and unpaused; a journal in the source lets you finish an interrupted move by
re-running the same command (or with --resume).`),
		Example: strings.TrimSpace(`
  # See what would move from namespace team-a, and in which order
  capctl move -n team-a --dry-run

  # Move namespace team-a to another management cluster
  capctl move -n team-a --to-kubeconfig target.kubeconfig

  # Move two clusters only (with copies of the ClusterClasses they use)
  capctl move -n team-a --cluster prod-1 --cluster prod-2 --to-kubeconfig target.kubeconfig

  # Back up every namespace, and restore into another cluster
  capctl move -A --to-directory ./backup
  capctl move --from-directory ./backup --to-kubeconfig target.kubeconfig`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(f); err != nil {
				return err
			}
			return o.run(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.toKubeconfig, "to-kubeconfig", "", "Path to the kubeconfig file of the target management cluster")
	fl.StringVar(&o.toContext, "to-kubeconfig-context", "", "Context of the target management cluster in --to-kubeconfig. If unspecified, its current context")
	fl.StringVarP(&o.namespace, "namespace", "n", "", "Namespace to move from. If unspecified, the namespace of the source context")
	fl.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "Move from every namespace")
	fl.StringArrayVar(&o.clusters, "cluster", nil, "Move only this Cluster's objects (repeatable; NAME, or NAMESPACE/NAME with -A). ClusterClasses it uses are copied, not removed")
	fl.BoolVar(&o.dryRun, "dry-run", false, "Print the object graph and the order of the move; write nothing")
	fl.StringVar(&o.toDirectory, "to-directory", "", "Write the objects to this (new or empty) directory instead of a cluster")
	fl.StringVar(&o.fromDirectory, "from-directory", "", "Restore the objects of a capctl backup directory into --to-kubeconfig")
	fl.BoolVar(&o.resume, "resume", false, "Finish the unfinished move recorded in the source cluster's journal")
	fl.DurationVar(&o.blockMoveTimeout, "block-move-timeout", move.DefaultBlockMoveTimeout, "How long to wait, in total, for every clusterctl.cluster.x-k8s.io/block-move annotation to be removed")
	fl.IntVar(&o.parallelism, "parallelism", move.DefaultParallelism, "How many objects of one owner level are written at once")
	fl.StringVarP(&o.output, "output", "o", "", "Output format of the plan or report: text (default), json or yaml")
	return cmd
}

func (o *moveOptions) validate(f *factory) error {
	switch o.output {
	case "", "text", "json", "yaml":
	default:
		return usageErrorf("invalid output format %q: use text, json or yaml", o.output)
	}
	if o.toDirectory != "" && o.toKubeconfig != "" {
		return usageErrorf("--to-directory and --to-kubeconfig cannot be used together")
	}
	if o.fromDirectory != "" && o.toDirectory != "" {
		return usageErrorf("--from-directory and --to-directory cannot be used together")
	}
	if o.fromDirectory != "" && f.global.kubeconfig != "" {
		return usageErrorf("--from-directory restores into --to-kubeconfig; --kubeconfig (the source) cannot be used with it")
	}
	if o.fromDirectory != "" && (o.namespace != "" || o.allNamespaces || len(o.clusters) > 0) {
		return usageErrorf("--from-directory restores the whole backup; -n, -A and --cluster do not apply")
	}
	if o.fromDirectory != "" && o.toKubeconfig == "" && !o.dryRun {
		return usageErrorf("--from-directory needs the target cluster: pass --to-kubeconfig")
	}
	if o.toKubeconfig == "" && o.toDirectory == "" && o.fromDirectory == "" && !o.dryRun {
		return usageErrorf("please specify a target cluster using the --to-kubeconfig flag when not using --dry-run, --to-directory or --from-directory")
	}
	if o.dryRun && (o.toDirectory != "") {
		return usageErrorf("--dry-run writes nothing; it cannot be used with --to-directory")
	}
	if o.resume && (o.toKubeconfig == "" || o.dryRun) {
		return usageErrorf("--resume finishes a move to another cluster: pass --to-kubeconfig (and no --dry-run)")
	}
	if o.allNamespaces && o.namespace != "" {
		return usageErrorf("-n/--namespace and -A/--all-namespaces cannot be used together")
	}
	for _, c := range o.clusters {
		if c == "" || strings.Count(c, "/") > 1 || strings.HasPrefix(c, "/") || strings.HasSuffix(c, "/") {
			return usageErrorf("invalid --cluster %q: use NAME or NAMESPACE/NAME", c)
		}
		if strings.Contains(c, "/") && !o.allNamespaces {
			ns := c[:strings.Index(c, "/")]
			if o.namespace != "" && ns != o.namespace {
				return usageErrorf("--cluster %q is not in namespace %q", c, o.namespace)
			}
		}
	}
	if o.blockMoveTimeout <= 0 {
		return usageErrorf("--block-move-timeout must be positive")
	}
	if o.parallelism < 1 || o.parallelism > 256 {
		return usageErrorf("--parallelism must be between 1 and 256")
	}
	// The same kubeconfig file and context for source and target is refused before connecting;
	// the same cluster reached another way is caught by the move itself.
	if o.toKubeconfig != "" && f.global.kubeconfig != "" {
		a, _ := filepath.Abs(o.toKubeconfig)
		b, _ := filepath.Abs(f.global.kubeconfig)
		if a == b && o.toContext == f.global.kubeconfigContext {
			return usageErrorf("--to-kubeconfig is the source kubeconfig (%s, same context): the target must be another management cluster", o.toKubeconfig)
		}
	}
	return nil
}

func (o *moveOptions) scope(src *cluster.Client) move.Scope {
	s := move.Scope{Namespace: o.namespace, AllNamespaces: o.allNamespaces, Clusters: o.clusters}
	if s.Namespace == "" && !s.AllNamespaces && src != nil {
		s.Namespace = src.Namespace
	}
	// NAMESPACE/NAME in the moved namespace is the same as NAME.
	for i, c := range s.Clusters {
		if !s.AllNamespaces && strings.HasPrefix(c, s.Namespace+"/") {
			s.Clusters[i] = strings.TrimPrefix(c, s.Namespace+"/")
		}
	}
	return s
}

func (o *moveOptions) run(ctx context.Context, f *factory) error {
	opts := move.Options{
		Resume: o.resume, BlockMoveTimeout: o.blockMoveTimeout, Parallelism: o.parallelism,
		Log: f.Logger(), Progress: newProgress(f.IO.ErrOut, f.IO.IsStderrTTY()),
	}
	// API server warnings (deprecated kinds, ...) are shown once each, as kubectl does.
	warnings := rest.NewWarningWriter(f.IO.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	if o.fromDirectory != "" {
		if o.dryRun {
			_, g, err := move.ReadBackup(o.fromDirectory)
			if err != nil {
				return err
			}
			return o.renderPlan(f.IO.Out, g, "backup "+o.fromDirectory)
		}
		dst, err := cluster.Connect(ctx, cluster.Options{Kubeconfig: o.toKubeconfig, Context: o.toContext, ConnectTimeout: f.global.connectTimeout, WarningHandler: warnings})
		if err != nil {
			return fmt.Errorf("target cluster: %w", err)
		}
		rep, err := move.FromDirectory(ctx, dst, o.fromDirectory, opts)
		return o.finish(f, rep, err, fmt.Sprintf("Restored %%d objects from %s into %s", o.fromDirectory, dst.Config.Host))
	}

	srcOpts := f.ClusterOptions()
	srcOpts.WarningHandler = warnings
	src, err := cluster.Connect(ctx, srcOpts)
	if err != nil {
		return err
	}
	opts.Scope = o.scope(src)
	if o.dryRun {
		g, err := move.Plan(ctx, src, opts.Scope)
		if err != nil {
			return err
		}
		return o.renderPlan(f.IO.Out, g, fmt.Sprintf("%s (%s)", src.Config.Host, opts.Scope))
	}
	if o.toDirectory != "" {
		rep, err := move.ToDirectory(ctx, src, o.toDirectory, opts)
		return o.finish(f, rep, err, fmt.Sprintf("Wrote %%d objects from %s (%s) to %s", src.Config.Host, opts.Scope, o.toDirectory))
	}
	dst, err := cluster.Connect(ctx, cluster.Options{Kubeconfig: o.toKubeconfig, Context: o.toContext, ConnectTimeout: f.global.connectTimeout, WarningHandler: warnings})
	if err != nil {
		return fmt.Errorf("target cluster: %w", err)
	}
	rep, err := move.Move(ctx, src, dst, opts)
	return o.finish(f, rep, err, fmt.Sprintf("Moved %%d objects from %s to %s", src.Config.Host, dst.Config.Host))
}

// newProgress prints "objects done/total" on stderr: redrawn on a terminal, else a line per 10%.
func newProgress(w io.Writer, tty bool) func(phase string, done, total int) {
	var mu sync.Mutex
	lastStep := map[string]int{}
	return func(phase string, done, total int) {
		mu.Lock()
		defer mu.Unlock()
		verb := map[string]string{"create": "Creating objects in the target", "delete": "Deleting objects from the source"}[phase]
		if tty {
			fmt.Fprintf(w, "\r%s: %d/%d", verb, done, total)
			if done == total {
				fmt.Fprintln(w)
			}
			return
		}
		step := done * 10 / max(total, 1)
		if step > lastStep[phase] || done == total {
			lastStep[phase] = step
			fmt.Fprintf(w, "%s: %d/%d\n", verb, done, total)
		}
	}
}

func (o *moveOptions) finish(f *factory, rep *move.Report, runErr error, headline string) error {
	if rep == nil {
		return runErr
	}
	if o.output == "json" || o.output == "yaml" {
		if err := writeStructured(f.IO.Out, o.output, rep); err != nil {
			return err
		}
		return runErr
	}
	w := f.IO.Out
	if runErr == nil {
		fmt.Fprintf(w, headline+" in %.1fs (%d Clusters, %d ClusterClasses; API requests: source %d, target %d).\n",
			rep.Objects, rep.Seconds, len(rep.Clusters), len(rep.ClusterClasses), rep.SourceRequests, rep.TargetRequests)
		if rep.Resumed {
			fmt.Fprintf(w, "This run finished the unfinished move %s.\n", rep.MoveID)
		}
		if rep.KeptInSource > 0 {
			fmt.Fprintf(w, "%d objects were copied and kept in the source (shared ClusterClasses and their templates, global objects).\n", rep.KeptInSource)
		}
		if len(rep.UserPaused) > 0 {
			fmt.Fprintf(w, "Still paused, as their users left them: %s\n", strings.Join(rep.UserPaused, ", "))
		}
		if o.toDirectory == "" && rep.Objects > 0 {
			fmt.Fprintf(w, "Verified: the target holds the same %d objects (kinds, names, specs, owners).\n", rep.Objects)
		}
	}
	renderExcluded(w, rep.Excluded, rep.Warnings)
	if len(rep.Differences) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "The target differs from the source:\n")
		for _, d := range rep.Differences {
			fmt.Fprintf(f.IO.ErrOut, "  %s: %s\n", d.Object, d.Problem)
		}
	}
	return runErr
}

func renderExcluded(w io.Writer, excluded []move.Exclusion, warnings []string) {
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

// planView is the dry-run output for machines.
type planView struct {
	Source   string              `json:"source"`
	Objects  int                 `json:"objects"`
	Levels   [][]move.Ref        `json:"levels"`
	Clusters map[string][]string `json:"clusters"`
	Excluded []move.Exclusion    `json:"excluded,omitempty"`
	Warnings []string            `json:"warnings,omitempty"`
}

func (o *moveOptions) renderPlan(w io.Writer, g *move.Graph, source string) error {
	pv := planView{Source: source, Objects: g.Count(), Clusters: map[string][]string{}, Excluded: g.Excluded, Warnings: g.Warnings}
	for _, level := range g.Order {
		var refs []move.Ref
		for _, n := range level {
			refs = append(refs, n.Ref)
			group := n.Cluster
			if group == "" {
				group = "(no cluster)"
			}
			pv.Clusters[group] = append(pv.Clusters[group], n.Ref.String()+flags(n))
		}
		pv.Levels = append(pv.Levels, refs)
	}
	if o.output == "json" || o.output == "yaml" {
		return writeStructured(w, o.output, pv)
	}
	fmt.Fprintf(w, "Dry run: %d objects would move from %s, in %d levels (nothing was written).\n", pv.Objects, source, len(pv.Levels))
	var groups []string
	for k := range pv.Clusters {
		groups = append(groups, k)
	}
	sort.Strings(groups)
	for _, k := range groups {
		title := "Cluster " + k
		if k == "(no cluster)" {
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
	renderExcluded(w, g.Excluded, g.Warnings)
	return nil
}

func flags(n *move.Node) string {
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
