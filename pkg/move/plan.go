package move

import (
	"context"
	"fmt"
	"time"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
)

// mode is what a Request does; Request.plan picks exactly one.
type mode int

const (
	modeBackupDryRun mode = iota // --from-directory --dry-run: the backup's graph
	modeRestore                  // --from-directory: the backup into the target
	modeAbandon                  // --abandon
	modeReplacement              // --plan-replacement
	modeDryRun                   // --dry-run: the source's graph, checked against the target if given
	modeToDirectory              // --to-directory: a backup of the source
	modeMove                     // source to target
)

// plan is a Request resolved once: its mode, the clusters and directories it uses, and its
// options with every default. The modes run from it; none derives the options again.
type plan struct {
	mode mode
	opts Options
	// hasTarget: the request names a target cluster (the Env reaches it)
	hasTarget     bool
	fromDirectory string
	toDirectory   string
	// env reaches the clusters (set by run)
	env env.Env
}

// plan validates the request and resolves it: the mode, the options' defaults (Options.defaults)
// and the settle time (--no-settle wins; DefaultSettle when 0).
func (r Request) plan() (*plan, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	p := &plan{mode: r.mode(), opts: r.Options, hasTarget: r.Target != nil, fromDirectory: r.FromDirectory, toDirectory: r.ToDirectory}
	p.opts.defaults()
	if r.NoSettle {
		p.opts.Settle = 0
	} else if p.opts.Settle == 0 {
		p.opts.Settle = DefaultSettle
	}
	return p, nil
}

// Connections is the env.Env a command runs the request in: the source (Source) and the target
// (Target) clusters, each connected when the request's mode first needs it (a restore from a
// directory never reaches a source), with -v 5 a log line for every API request of either.
func (r Request) Connections() env.Env {
	src, dst := r.Source, r.Target
	if l := r.Log.V(5); l.Enabled() {
		logRequests := func(side string) func(string, string, int, time.Duration, error) {
			return func(method, url string, status int, elapsed time.Duration, err error) {
				if err != nil {
					l.Info("API request", "cluster", side, "method", method, "url", url, "error", err.Error(), "ms", elapsed.Milliseconds())
					return
				}
				l.Info("API request", "cluster", side, "method", method, "url", url, "status", status, "ms", elapsed.Milliseconds())
			}
		}
		src.OnRequest = logRequests("source")
		if dst != nil {
			t := *dst
			t.OnRequest = logRequests("target")
			dst = &t
		}
	}
	e := env.Env{Log: r.Log, Dial: func(ctx context.Context) (*cluster.Client, error) { return cluster.Connect(ctx, src) }}
	if dst != nil {
		e.DialTarget = func(ctx context.Context) (*cluster.Client, error) { return cluster.Connect(ctx, *dst) }
	}
	return e
}

// mode picks what a valid request does.
func (r Request) mode() mode {
	switch {
	case r.FromDirectory != "" && r.DryRun:
		return modeBackupDryRun
	case r.FromDirectory != "":
		return modeRestore
	case r.Abandon:
		return modeAbandon
	case r.PlanReplacement:
		return modeReplacement
	case r.DryRun:
		return modeDryRun
	case r.ToDirectory != "":
		return modeToDirectory
	}
	return modeMove
}

// run reaches the clusters the plan's mode needs through e (the source first, then the target)
// and runs the mode.
func (p *plan) run(ctx context.Context, e env.Env) (*Result, error) {
	p.env = e
	res := &Result{}
	switch p.mode {
	case modeBackupDryRun:
		res.Source = p.fromDirectory
		_, g, err := ReadBackup(ctx, p.fromDirectory, p.opts.MaxBackupSize)
		if err != nil {
			return nil, err
		}
		res.Plan, res.PlanSource = g, "backup "+p.fromDirectory
		return res, nil
	case modeRestore:
		res.Source = p.fromDirectory
		dst, err := p.connectTarget(ctx, res)
		if err != nil {
			return nil, err
		}
		res.Report, err = restore(ctx, dst, p.fromDirectory, p.opts)
		return res, err
	}

	src, err := e.Cluster(ctx)
	if err != nil {
		return nil, err
	}
	res.Source = src.Config.Host
	switch p.mode {
	case modeAbandon:
		var dst *cluster.Client
		if p.hasTarget {
			if dst, err = p.connectTarget(ctx, res); err != nil {
				return nil, err
			}
		}
		res.Abandoned, err = abandon(ctx, src, dst, p.opts)
		return res, err
	case modeReplacement:
		dst, err := p.connectTarget(ctx, res)
		if err != nil {
			return nil, err
		}
		res.Replacement, err = PlanReplacement(ctx, src, dst, p.opts)
		return res, err
	case modeDryRun:
		return p.dryRun(ctx, src, res)
	case modeToDirectory:
		res.Target = p.toDirectory
		res.Report, err = backup(ctx, src, p.toDirectory, p.opts)
		return res, err
	}
	dst, err := p.connectTarget(ctx, res)
	if err != nil {
		return nil, err
	}
	res.Report, err = moveClusters(ctx, src, dst, p.opts)
	return res, err
}

// connectTarget reaches the target cluster and names it in res.
func (p *plan) connectTarget(ctx context.Context, res *Result) (*cluster.Client, error) {
	dst, err := p.env.TargetCluster(ctx)
	if err != nil {
		return nil, fmt.Errorf("target cluster: %w", err)
	}
	res.Target = dst.Config.Host
	return dst, nil
}

// dryRun plans the move from src and lists unfinished moves; with a target it also checks the
// target as the move would: contracts, providers, kinds, and the conversion of every object to
// the target's versions. It writes nothing.
func (p *plan) dryRun(ctx context.Context, src *cluster.Client, res *Result) (*Result, error) {
	scope := p.opts.Scope.resolve(src)
	var err error
	if res.Pending, err = PendingMoves(ctx, src); err != nil {
		return nil, err
	}
	g, err := Plan(ctx, src, scope)
	if err != nil {
		return res, err
	}
	res.Plan, res.PlanSource = g, fmt.Sprintf("%s (%s)", src.Config.Host, scope)
	if !p.hasTarget {
		return res, nil
	}
	dst, err := p.connectTarget(ctx, res)
	if err != nil {
		return res, err
	}
	rep := &Report{}
	if rep.Contracts, err = checkContracts(ctx, src, dst, nil); err == nil {
		_, err = preflight(ctx, dst, g, p.opts, rep)
	}
	res.Contracts, res.Conversions = rep.Contracts, rep.Conversions
	return res, err
}
