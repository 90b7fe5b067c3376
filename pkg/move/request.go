package move

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
)

// Request is one `capctl move`: where from (a cluster or a backup directory), where to (a
// cluster or a directory), or a dry run. Run reaches the clusters it needs through its Env
// (Connections builds the one a command uses) and does it.
type Request struct {
	// Source names the source management cluster (unused with FromDirectory).
	Source cluster.Options
	// Target names the target management cluster; nil for a dry run or a backup.
	Target *cluster.Options
	// FromDirectory restores a backup into Target; ToDirectory writes a backup of the source.
	FromDirectory string
	ToDirectory   string
	// DryRun plans and writes nothing.
	DryRun bool
	// PlanReplacement writes the blue/green runbook for replacing the source by Target, and
	// changes nothing.
	PlanReplacement bool
	// NoSettle skips the check after a move (it wins over Options.Settle, which is DefaultSettle
	// when 0).
	NoSettle bool
	// Abandon undoes the unfinished move recorded for the scope instead of finishing it (Abandon);
	// Target, when given, must be that move's target: what the move created there is removed.
	Abandon bool
	// Options: scope (the namespace defaults to the source context's), resume, limits, logs.
	Options
}

// Result is what Run did: a plan (dry run) or a report, and the clusters involved.
type Result struct {
	// Plan is the graph a dry run found (from the source or the backup directory).
	Plan *Graph
	// PlanSource names where the plan was read from.
	PlanSource string
	// Pending lists unfinished moves and backups recorded in the source (dry runs show them).
	Pending []Unfinished
	// Replacement is the runbook PlanReplacement asked for.
	Replacement *Replacement
	// Abandoned is what --abandon did.
	Abandoned *AbandonReport
	// Report of a move, backup or restore.
	Report *Report
	// Contracts and Conversions: a dry run towards a target cluster, what would be converted
	// (and lost) on the way.
	Contracts   Contracts    `json:"contracts"`
	Conversions []Conversion `json:"conversions,omitempty"`
	// Source and Target are the API server addresses (or directories) involved.
	Source, Target string
}

// Validate checks the request before anything connects.
func (r Request) Validate() error {
	if err := cluster.CheckNamespace(r.Scope.Namespace); err != nil {
		return err
	}
	switch {
	case r.Abandon && (r.DryRun || r.Resume || r.RestartTarget || r.FromDirectory != "" || r.ToDirectory != "" || r.PlanReplacement):
		return fmt.Errorf("--abandon undoes an unfinished move: it cannot be combined with --dry-run, --resume, --restart-target, --plan-replacement or a directory (pass -n, and --to-kubeconfig for the move's target)")
	case r.PlanReplacement && (r.Target == nil || r.DryRun || r.FromDirectory != "" || r.ToDirectory != "" || r.Resume):
		return fmt.Errorf("--plan-replacement plans the replacement of the source by the cluster of --to-kubeconfig and changes nothing: pass --to-kubeconfig, without --dry-run, --resume or a directory")
	case r.FromDirectory != "" && r.Source.Kubeconfig != "":
		return fmt.Errorf("--from-directory restores into --to-kubeconfig; --kubeconfig (the source) cannot be used with it")
	case r.Target != nil && sameKubeconfig(r.Source, *r.Target):
		return fmt.Errorf("--to-kubeconfig is the source kubeconfig (%s, same context): the target must be another management cluster", r.Target.Kubeconfig)
	case r.FromDirectory != "" && r.ToDirectory != "":
		return fmt.Errorf("--from-directory and --to-directory cannot be used together")
	case r.ToDirectory != "" && r.Target != nil:
		return fmt.Errorf("--to-directory and --to-kubeconfig cannot be used together")
	case r.FromDirectory != "" && (r.Scope.Namespace != "" || r.Scope.AllNamespaces || len(r.Scope.Clusters) > 0):
		return fmt.Errorf("--from-directory restores the whole backup; -n, -A and --cluster do not apply")
	case r.FromDirectory != "" && r.Target == nil && !r.DryRun:
		return fmt.Errorf("--from-directory needs the target cluster: pass --to-kubeconfig")
	case r.Target == nil && r.ToDirectory == "" && r.FromDirectory == "" && !r.DryRun && !r.Abandon:
		return fmt.Errorf("please specify a target cluster using the --to-kubeconfig flag when not using --dry-run, --to-directory or --from-directory")
	case r.DryRun && r.ToDirectory != "":
		return fmt.Errorf("--dry-run writes nothing; it cannot be used with --to-directory")
	case (r.Resume || r.RestartTarget) && (r.Target == nil || r.DryRun || r.FromDirectory != ""):
		return fmt.Errorf("--resume and --restart-target finish a move to another cluster: pass --to-kubeconfig (and no --dry-run)")
	case r.RestartTarget && !r.Resume:
		return fmt.Errorf("--restart-target continues an unfinished move: use it with --resume")
	case r.Scope.AllNamespaces && r.Scope.Namespace != "":
		return fmt.Errorf("-n/--namespace and -A/--all-namespaces cannot be used together")
	}
	for _, c := range r.Scope.Clusters {
		if c == "" || strings.Count(c, "/") > 1 || strings.HasPrefix(c, "/") || strings.HasSuffix(c, "/") {
			return fmt.Errorf("invalid --cluster %q: use NAME or NAMESPACE/NAME", c)
		}
		if i := strings.Index(c, "/"); i >= 0 && !r.Scope.AllNamespaces && r.Scope.Namespace != "" && c[:i] != r.Scope.Namespace {
			return fmt.Errorf("--cluster %q is not in namespace %q", c, r.Scope.Namespace)
		}
	}
	if r.Settle < 0 {
		return fmt.Errorf("--settle must not be negative (use --no-settle to skip the check)")
	}
	if r.Parallelism < 0 || r.Parallelism > MaxParallelism {
		return fmt.Errorf("--parallelism must be between 1 and %d", MaxParallelism)
	}
	return nil
}

// sameKubeconfig tells whether the source and the target name the same kubeconfig file and
// context, refused before connecting; the same cluster reached another way is caught by the move
// itself.
func sameKubeconfig(src, dst cluster.Options) bool {
	if src.Kubeconfig == "" || dst.Kubeconfig == "" {
		return false
	}
	a, _ := filepath.Abs(dst.Kubeconfig)
	b, _ := filepath.Abs(src.Kubeconfig)
	return a == b && dst.Context == src.Context
}

// resolve is the one place a move's scope gets its defaults: the namespace of the source
// context (cluster.Client.NamespaceOr) when neither -n nor -A is given, and NAMESPACE/NAME in
// the moved namespace as NAME.
func (s Scope) resolve(src *cluster.Client) Scope {
	if !s.AllNamespaces {
		s.Namespace = src.NamespaceOr(s.Namespace)
	}
	if len(s.Clusters) > 0 {
		cs := make([]string, len(s.Clusters))
		for i, c := range s.Clusters {
			if !s.AllNamespaces {
				c = strings.TrimPrefix(c, s.Namespace+"/")
			}
			cs[i] = c
		}
		s.Clusters = cs
	}
	return s
}

// Run does the request: it resolves it once (Request.plan: validation, defaults), reaches the
// clusters its mode needs through e (e.Cluster the source, e.TargetCluster the target) and
// plans, moves, backs up or restores.
func Run(ctx context.Context, e env.Env, req Request) (*Result, error) {
	p, err := req.plan()
	if err != nil {
		return nil, err
	}
	return p.run(ctx, e)
}
