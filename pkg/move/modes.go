package move

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
)

// Request is one of the things `capctl move` does, each its own type with its own short
// Validate: MoveRequest (source to target), DryRunRequest, BackupRequest (to a directory),
// RestoreRequest (from one), AbandonRequest and ReplacementRequest. Flags.Request picks the one
// the command's flags ask for. The source is the Env's management cluster (env.Env.Cluster); the
// target, for the modes that have one, its TargetCluster.
type Request interface {
	Validate() error
	// run does the validated request with its options defaulted.
	run(ctx context.Context, e env.Env, res *Result) (*Result, error)
	options() *Options
}

// Run does the request: it validates it, gives its options their defaults once
// (Options.defaults), reaches the clusters its mode needs through e (the source first, then the
// target) and plans, moves, backs up or restores.
func Run(ctx context.Context, e env.Env, req Request) (*Result, error) {
	if req == nil {
		return nil, errors.New("no move request")
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	req.options().defaults()
	return req.run(ctx, e, &Result{})
}

// MoveRequest moves the scope's clusters from the source to the target, or, with Resume,
// finishes the unfinished move recorded in the source.
type MoveRequest struct {
	Options
	// NoSettle skips the check after the move (it wins over Options.Settle, which is
	// DefaultSettle when 0).
	NoSettle bool
}

func (r *MoveRequest) options() *Options { return &r.Options }

// Validate checks the scope and options; --restart-target only continues a resumed move.
func (r *MoveRequest) Validate() error {
	if r.RestartTarget && !r.Resume {
		return fmt.Errorf("--restart-target continues an unfinished move: use it with --resume")
	}
	return r.Options.validate()
}

func (r *MoveRequest) run(ctx context.Context, e env.Env, res *Result) (*Result, error) {
	r.Settle = settleOf(r.Settle, r.NoSettle)
	src, err := source(ctx, e, res)
	if err != nil {
		return nil, err
	}
	dst, err := target(ctx, e, res)
	if err != nil {
		return nil, err
	}
	res.Report, err = moveClusters(ctx, src, dst, r.Options)
	return res, err
}

// DryRunRequest plans the move of the scope from the source and lists unfinished moves; when
// the Env has a target it also checks the target as the move would: contracts, providers,
// kinds, and the conversion of every object to the target's versions. It writes nothing.
type DryRunRequest struct{ Options }

func (r *DryRunRequest) options() *Options { return &r.Options }

// Validate checks the scope and options; a dry run resumes nothing.
func (r *DryRunRequest) Validate() error {
	if err := noResume(r.Options); err != nil {
		return err
	}
	return r.Options.validate()
}

func (r *DryRunRequest) run(ctx context.Context, e env.Env, res *Result) (*Result, error) {
	src, err := source(ctx, e, res)
	if err != nil {
		return nil, err
	}
	scope := r.Scope.resolve(src)
	if res.Pending, err = PendingMoves(ctx, src); err != nil {
		return nil, err
	}
	g, err := Plan(ctx, src, scope)
	if err != nil {
		return res, err
	}
	res.Plan, res.PlanSource = g, fmt.Sprintf("%s (%s)", src.Config.Host, scope)
	if !e.HasTarget() {
		return res, nil
	}
	dst, err := target(ctx, e, res)
	if err != nil {
		return res, err
	}
	rep := &Report{}
	if rep.Contracts, err = checkContracts(ctx, src, dst, nil); err == nil {
		_, err = preflight(ctx, dst, g, r.Options, rep)
	}
	res.Contracts, res.Conversions = rep.Contracts, rep.Conversions
	return res, err
}

// BackupRequest writes a backup of the scope's clusters into Directory, moving nothing.
type BackupRequest struct {
	Directory string
	Options
}

func (r *BackupRequest) options() *Options { return &r.Options }

// Validate checks the directory, scope and options.
func (r *BackupRequest) Validate() error {
	if r.Directory == "" {
		return fmt.Errorf("a backup needs its directory: pass --to-directory")
	}
	if err := noResume(r.Options); err != nil {
		return err
	}
	return r.Options.validate()
}

func (r *BackupRequest) run(ctx context.Context, e env.Env, res *Result) (*Result, error) {
	src, err := source(ctx, e, res)
	if err != nil {
		return nil, err
	}
	res.Target = r.Directory
	res.Report, err = backup(ctx, src, r.Directory, r.Options)
	return res, err
}

// RestoreRequest restores the backup in Directory into the target, whole; with DryRun it reads
// the backup and shows its graph, reaching no cluster.
type RestoreRequest struct {
	Directory string
	DryRun    bool
	// NoSettle skips the check after the restore (as MoveRequest's).
	NoSettle bool
	Options
}

func (r *RestoreRequest) options() *Options { return &r.Options }

// Validate checks the directory and options: a restore takes the whole backup, so no scope.
func (r *RestoreRequest) Validate() error {
	if r.Directory == "" {
		return fmt.Errorf("a restore needs the backup's directory: pass --from-directory")
	}
	if r.Scope.Namespace != "" || r.Scope.AllNamespaces || len(r.Scope.Clusters) > 0 {
		return fmt.Errorf("--from-directory restores the whole backup; -n, -A and --cluster do not apply")
	}
	if err := noResume(r.Options); err != nil {
		return err
	}
	return r.Options.validate()
}

func (r *RestoreRequest) run(ctx context.Context, e env.Env, res *Result) (*Result, error) {
	res.Source = r.Directory
	if r.DryRun {
		_, g, err := ReadBackup(ctx, r.Directory, r.MaxBackupSize)
		if err != nil {
			return nil, err
		}
		res.Plan, res.PlanSource = g, "backup "+r.Directory
		return res, nil
	}
	r.Settle = settleOf(r.Settle, r.NoSettle)
	dst, err := target(ctx, e, res)
	if err != nil {
		return nil, err
	}
	res.Report, err = restore(ctx, dst, r.Directory, r.Options)
	return res, err
}

// AbandonRequest undoes the unfinished move recorded for the scope (or an interrupted backup)
// instead of finishing it; when the Env has a target, it must be that move's target: what the
// move created there is removed.
type AbandonRequest struct{ Options }

func (r *AbandonRequest) options() *Options { return &r.Options }

// Validate checks the scope and options; abandoning resumes nothing.
func (r *AbandonRequest) Validate() error {
	if r.Resume || r.RestartTarget {
		return errAbandonWith
	}
	return r.Options.validate()
}

func (r *AbandonRequest) run(ctx context.Context, e env.Env, res *Result) (*Result, error) {
	src, err := source(ctx, e, res)
	if err != nil {
		return nil, err
	}
	var dst *cluster.Client
	if e.HasTarget() {
		if dst, err = target(ctx, e, res); err != nil {
			return nil, err
		}
	}
	res.Abandoned, err = abandon(ctx, src, dst, r.Options)
	return res, err
}

// ReplacementRequest writes the blue/green runbook for replacing the source by the target, and
// changes nothing.
type ReplacementRequest struct{ Options }

func (r *ReplacementRequest) options() *Options { return &r.Options }

// Validate checks the scope and options; planning resumes nothing.
func (r *ReplacementRequest) Validate() error {
	if r.Resume || r.RestartTarget {
		return errReplacementWith
	}
	return r.Options.validate()
}

func (r *ReplacementRequest) run(ctx context.Context, e env.Env, res *Result) (*Result, error) {
	src, err := source(ctx, e, res)
	if err != nil {
		return nil, err
	}
	dst, err := target(ctx, e, res)
	if err != nil {
		return nil, err
	}
	res.Replacement, err = PlanReplacement(ctx, src, dst, r.Options)
	return res, err
}

// validate holds the rules every mode's options follow: the scope's syntax, the settle time and
// the parallelism.
func (o Options) validate() error {
	if err := cluster.CheckNamespace(o.Scope.Namespace); err != nil {
		return err
	}
	if o.Scope.AllNamespaces && o.Scope.Namespace != "" {
		return fmt.Errorf("-n/--namespace and -A/--all-namespaces cannot be used together")
	}
	for _, c := range o.Scope.Clusters {
		if c == "" || strings.Count(c, "/") > 1 || strings.HasPrefix(c, "/") || strings.HasSuffix(c, "/") {
			return fmt.Errorf("invalid --cluster %q: use NAME or NAMESPACE/NAME", c)
		}
		if i := strings.Index(c, "/"); i >= 0 && !o.Scope.AllNamespaces && o.Scope.Namespace != "" && c[:i] != o.Scope.Namespace {
			return fmt.Errorf("--cluster %q is not in namespace %q", c, o.Scope.Namespace)
		}
	}
	if o.Settle < 0 {
		return fmt.Errorf("--settle must not be negative (use --no-settle to skip the check)")
	}
	if o.Parallelism < 0 || o.Parallelism > MaxParallelism {
		return fmt.Errorf("--parallelism must be between 1 and %d", MaxParallelism)
	}
	return nil
}

// noResume refuses --resume and --restart-target outside a move to another cluster.
func noResume(o Options) error {
	if o.Resume || o.RestartTarget {
		return fmt.Errorf("--resume and --restart-target finish a move to another cluster: pass --to-kubeconfig (and no --dry-run)")
	}
	return nil
}

// settleOf is the settle time a move or restore watches for: none with --no-settle,
// DefaultSettle when unset.
func settleOf(settle time.Duration, noSettle bool) time.Duration {
	switch {
	case noSettle:
		return 0
	case settle == 0:
		return DefaultSettle
	}
	return settle
}

// source reaches the source cluster and names it in res.
func source(ctx context.Context, e env.Env, res *Result) (*cluster.Client, error) {
	src, err := e.Cluster(ctx)
	if err != nil {
		return nil, err
	}
	res.Source = src.Config.Host
	return src, nil
}

// target reaches the target cluster and names it in res.
func target(ctx context.Context, e env.Env, res *Result) (*cluster.Client, error) {
	dst, err := e.TargetCluster(ctx)
	if err != nil {
		return nil, fmt.Errorf("target cluster: %w", err)
	}
	res.Target = dst.Config.Host
	return dst, nil
}
