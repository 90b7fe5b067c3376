package move

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/capctl/capctl/pkg/cluster"
)

// Request is one `capctl move`: where from (a cluster or a backup directory), where to (a
// cluster or a directory), or a dry run. Run connects the clusters it needs and does it.
type Request struct {
	// Source selects the source management cluster (unused with FromDirectory).
	Source cluster.Options
	// Target selects the target management cluster; nil for a dry run or a backup.
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
	switch {
	case r.Abandon && (r.DryRun || r.Resume || r.RestartTarget || r.FromDirectory != "" || r.ToDirectory != "" || r.PlanReplacement):
		return fmt.Errorf("--abandon undoes an unfinished move: it cannot be combined with --dry-run, --resume, --restart-target, --plan-replacement or a directory (pass -n, and --to-kubeconfig for the move's target)")
	case r.PlanReplacement && (r.Target == nil || r.DryRun || r.FromDirectory != "" || r.ToDirectory != "" || r.Resume):
		return fmt.Errorf("--plan-replacement plans the replacement of the source by the cluster of --to-kubeconfig and changes nothing: pass --to-kubeconfig, without --dry-run, --resume or a directory")
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
	if r.Parallelism < 0 || r.Parallelism > 256 {
		return fmt.Errorf("--parallelism must be between 1 and 256")
	}
	return nil
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

// Run does the request: it connects the clusters it needs and plans, moves, backs up or
// restores. With -v 5 every request is logged.
func Run(ctx context.Context, req Request) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	opts := req.Options
	opts.defaults()
	if req.NoSettle {
		opts.Settle = 0
	} else if opts.Settle == 0 {
		opts.Settle = DefaultSettle
	}
	if l := opts.Log.V(5); l.Enabled() {
		logRequests := func(side string) func(string, string, int, time.Duration, error) {
			return func(method, url string, status int, elapsed time.Duration, err error) {
				if err != nil {
					l.Info("API request", "cluster", side, "method", method, "url", url, "error", err.Error(), "ms", elapsed.Milliseconds())
					return
				}
				l.Info("API request", "cluster", side, "method", method, "url", url, "status", status, "ms", elapsed.Milliseconds())
			}
		}
		req.Source.OnRequest = logRequests("source")
		if req.Target != nil {
			t := *req.Target
			t.OnRequest = logRequests("target")
			req.Target = &t
		}
	}
	res := &Result{}
	connectTarget := func() (*cluster.Client, error) {
		dst, err := cluster.Connect(ctx, *req.Target)
		if err != nil {
			return nil, fmt.Errorf("target cluster: %w", err)
		}
		res.Target = dst.Config.Host
		return dst, nil
	}

	if req.FromDirectory != "" {
		res.Source = req.FromDirectory
		if req.DryRun {
			_, g, err := ReadBackup(ctx, req.FromDirectory, opts.MaxBackupSize)
			if err != nil {
				return nil, err
			}
			res.Plan, res.PlanSource = g, "backup "+req.FromDirectory
			return res, nil
		}
		dst, err := connectTarget()
		if err != nil {
			return nil, err
		}
		res.Report, err = FromDirectory(ctx, dst, req.FromDirectory, opts)
		return res, err
	}

	src, err := cluster.Connect(ctx, req.Source)
	if err != nil {
		return nil, err
	}
	res.Source = src.Config.Host
	if req.Abandon {
		var dst *cluster.Client
		if req.Target != nil {
			if dst, err = connectTarget(); err != nil {
				return nil, err
			}
		}
		res.Abandoned, err = Abandon(ctx, src, dst, opts)
		return res, err
	}
	if req.PlanReplacement {
		dst, err := connectTarget()
		if err != nil {
			return nil, err
		}
		res.Replacement, err = PlanReplacement(ctx, src, dst, opts)
		return res, err
	}
	if req.DryRun {
		opts.Scope = opts.Scope.resolve(src)
		if res.Pending, err = PendingMoves(ctx, src); err != nil {
			return nil, err
		}
		g, err := Plan(ctx, src, opts.Scope)
		if err != nil {
			return res, err
		}
		res.Plan, res.PlanSource = g, fmt.Sprintf("%s (%s)", src.Config.Host, opts.Scope)
		if req.Target == nil {
			return res, nil
		}
		// With a target, the dry run also checks it as the move would: contracts, providers,
		// kinds, and the conversion of every object to the target's versions.
		dst, err := connectTarget()
		if err != nil {
			return res, err
		}
		rep := &Report{}
		if rep.Contracts, err = checkContracts(ctx, src, dst, nil); err == nil {
			_, err = preflight(ctx, dst, g, opts, rep)
		}
		res.Contracts, res.Conversions = rep.Contracts, rep.Conversions
		return res, err
	}
	if req.ToDirectory != "" {
		res.Target = req.ToDirectory
		res.Report, err = ToDirectory(ctx, src, req.ToDirectory, opts)
		return res, err
	}
	dst, err := connectTarget()
	if err != nil {
		return nil, err
	}
	res.Report, err = Move(ctx, src, dst, opts)
	return res, err
}
