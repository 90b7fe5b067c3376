package main

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/move"
)

// moveOptions are the flags of `capctl move`.
type moveOptions struct {
	deps
	toKubeconfig     string
	toContext        string
	namespace        string
	allNamespaces    bool
	clusters         []string
	dryRun           bool
	toDirectory      string
	fromDirectory    string
	resume           bool
	restartTarget    bool
	blockMoveTimeout time.Duration
	parallelism      int
	maxBackupSize    string
	acceptLoss       bool
	settle           time.Duration
	noSettle         bool
	abandon          bool
	planReplacement  bool
	output           output.Format

	// request is the move flags as given, and mode the one mode request they ask for (both
	// filled by complete).
	request move.Flags
	mode    move.Request
}

func newCmdMove(f *factory, runF func(*moveOptions) error) *cobra.Command {
	o := &moveOptions{deps: f.deps()}
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "move",
		Short:   "Move Cluster API objects to another management cluster, or to/from a directory",
		Long: strings.TrimSpace(`
Move Cluster API objects and all their dependencies between management clusters, or back them up
to a directory and restore them.

capctl reads the objects once and keeps that copy in a journal in the source (ConfigMap
capctl-move-journal and Secrets capctl-move-journal-N). It pauses the Clusters and ClusterClasses
it moves, creates every object in the target from that copy (owners first, paused), compares the
target with the copy (labels, annotations, finalizers, owners, spec, data), and only then deletes
from the source, unpauses in the target and removes the journal. A move that fails before deleting
leaves the source intact and unpaused. A move that was interrupted at any point (even killed) is
finished by re-running the same command or with --resume; if the target was lost or rebuilt, add
--restart-target to re-create everything in the new target from the journal's copy.

The target may be on a newer Cluster API contract than the source (a v1.10 management cluster,
storing v1beta1, to a v1.11+ one storing v1beta2): each object is read as the source stores it,
converted to the version the target stores (as capctl convert does, round-trip checked) and
verified in that form. --dry-run --to-kubeconfig lists every conversion and any value that would
not survive it; such a move is refused unless --accept-conversion-loss. A target on an older
contract than the source is refused.`),
		Example: strings.TrimSpace(`
  # See what would move from namespace team-a, and in which order
  capctl move -n team-a --dry-run

  # Move namespace team-a to another management cluster
  capctl move -n team-a --to-kubeconfig target.kubeconfig

  # Move two clusters only (with copies of the ClusterClasses they use)
  capctl move -n team-a --cluster prod-1 --cluster prod-2 --to-kubeconfig target.kubeconfig

  # Finish an interrupted move whose target was rebuilt empty
  capctl move --resume --restart-target --to-kubeconfig new-target.kubeconfig

  # Replace this management cluster by a new one (blue/green): print the runbook
  capctl move -n team-a --plan-replacement --to-kubeconfig new.kubeconfig

  # Back up every namespace, and restore into another cluster
  capctl move -A --to-directory ./backup
  capctl move --from-directory ./backup --to-kubeconfig target.kubeconfig`),
		Args: cobra.NoArgs,
		RunE: leafRun(o, o.complete, runF, runMove),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.toKubeconfig, "to-kubeconfig", "", "Path to the kubeconfig file of the target management cluster")
	fl.StringVar(&o.toContext, "to-kubeconfig-context", "", "Context of the target management cluster in --to-kubeconfig. If unspecified, its current context")
	addNamespaceFlags(cmd, &o.namespace, &o.allNamespaces, "Namespace to move from. If unspecified, the namespace of the source context", "Move from every namespace")
	fl.StringArrayVar(&o.clusters, "cluster", nil, "Move only this Cluster's objects (repeatable; NAME, or NAMESPACE/NAME; with -A a NAME used in several namespaces is refused). ClusterClasses it uses are copied, not removed")
	fl.BoolVar(&o.dryRun, "dry-run", false, "Print the object graph and the order of the move, and any unfinished move; write nothing")
	fl.StringVar(&o.toDirectory, "to-directory", "", "Write the objects to this (new or empty) directory instead of a cluster")
	fl.StringVar(&o.fromDirectory, "from-directory", "", "Restore the objects of a capctl backup directory into --to-kubeconfig")
	fl.BoolVar(&o.resume, "resume", false, "Finish the unfinished move recorded in the source cluster's journal")
	fl.BoolVar(&o.restartTarget, "restart-target", false, "With --resume: the move's target was lost or rebuilt; re-create every object in --to-kubeconfig from the journal's copy and finish there")
	positiveDurationVar(fl, &o.blockMoveTimeout, "block-move-timeout", move.DefaultBlockMoveTimeout, "How long to wait, in total, for every clusterctl.cluster.x-k8s.io/block-move annotation to be removed")
	fl.Var(intBetween(&o.parallelism, move.DefaultParallelism, 1, move.MaxParallelism), "parallelism", "How many objects of one owner level are written at once")
	fl.BoolVar(&o.acceptLoss, "accept-conversion-loss", false, "Move even when converting objects to the target's API versions (a v1beta1 to v1beta2 management cluster) loses values; the dry run lists them, the journal and the report record them")
	fl.DurationVar(&o.settle, "settle", move.DefaultSettle, "After the move, watch the moved clusters in the target this long and report Machines created or deleted, provider IDs changed, or Available lost")
	fl.BoolVar(&o.planReplacement, "plan-replacement", false, "Print the runbook for replacing this management cluster by --to-kubeconfig (blue/green): providers to install there, the contract jump and conversions, what does not move, the move command and its checks; changes nothing")
	fl.BoolVar(&o.noSettle, "no-settle", false, "Skip the check after the move (--settle)")
	fl.BoolVar(&o.abandon, "abandon", false, "Undo the unfinished move of -n (or an interrupted backup) instead of finishing it, before it deleted anything from the source: unpause the source and, with --to-kubeconfig, remove from the target what the move created there")
	fl.StringVar(&o.maxBackupSize, "max-backup-size", userinput.Human(move.DefaultMaxBackupSize), "With --from-directory: the most a restore reads from the backup's files in all (each file is bounded by --max-input-size)")
	addFormatFlag(cmd, &o.output, "the plan or the report")
	return cmd
}

// complete builds the one move request from the flags and the global ones and checks it, before
// anything connects.
func (o *moveOptions) complete([]string) error {
	maxBackup, err := userinput.ParseSize(o.maxBackupSize)
	if err != nil {
		return usageErrorf("--max-backup-size: %v", err)
	}
	// API server warnings (deprecated kinds, ...) are shown once each, as kubectl does.
	warnings := rest.NewWarningWriter(o.IO.ErrOut, rest.WarningWriterOptions{Deduplicate: true})
	src := o.ClusterOptions()
	req := move.Flags{
		Source:        src,
		FromDirectory: o.fromDirectory, ToDirectory: o.toDirectory, DryRun: o.dryRun, NoSettle: o.noSettle, PlanReplacement: o.planReplacement, Abandon: o.abandon,
		Options: move.Options{
			Scope:  move.Scope{Namespace: o.namespace, AllNamespaces: o.allNamespaces, Clusters: o.clusters},
			Resume: o.resume, RestartTarget: o.restartTarget, BlockMoveTimeout: o.blockMoveTimeout, Parallelism: o.parallelism, MaxBackupSize: maxBackup,
			AcceptConversionLoss: o.acceptLoss, Settle: o.settle,
			Log: o.Logger(), Progress: output.NewProgress(o.IO).Counter(map[string]string{
				"create": "Creating objects in the target", "delete": "Deleting objects from the source"}),
		},
	}
	req.Source.WarningHandler = warnings
	if o.toKubeconfig != "" {
		req.Target = &cluster.Options{Kubeconfig: o.toKubeconfig, KubeconfigFlag: "--to-kubeconfig", Context: o.toContext, ConnectTimeout: src.ConnectTimeout, WarningHandler: warnings}
	}
	mode, err := req.Request()
	if err != nil {
		return usageError{err}
	}
	o.request, o.mode = req, mode
	return nil
}

// runMove makes the one move.Run call and renders what it returned: the runbook, the plan, or
// the report.
func runMove(ctx context.Context, o *moveOptions) error {
	res, err := move.Run(ctx, o.request.Connections(), o.mode)
	if res == nil {
		return err
	}
	if res.Replacement != nil {
		return output.Render(o.IO.Out, o.output, res.Replacement, res.Replacement.WriteText)
	}
	if res.Abandoned != nil && err == nil {
		return output.Render(o.IO.Out, o.output, res.Abandoned, res.Abandoned.WriteText)
	}
	if res.Plan != nil || (o.dryRun && len(res.Pending) > 0) {
		if perr := output.Render(o.IO.Out, o.output, move.NewPlanView(res), func(w io.Writer) error { return move.RenderPlan(w, res) }); perr != nil {
			return perr
		}
		return err
	}
	rep := res.Report
	if rep == nil {
		return err
	}
	view := move.ReportText{Result: res, FromDirectory: o.fromDirectory != "", ToDirectory: o.toDirectory != "", Err: err}
	if perr := output.Render(o.IO.Out, o.output, rep, view.WriteText); perr != nil {
		return perr
	}
	if !o.output.Structured() {
		_ = rep.WriteDifferences(o.IO.ErrOut)
	}
	return err
}
