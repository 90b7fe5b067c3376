package move

import (
	"context"
	"fmt"
	"time"

	"github.com/capctl/capctl/pkg/cluster"
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
	mode          mode
	opts          Options
	source        cluster.Options
	target        *cluster.Options
	fromDirectory string
	toDirectory   string
}

// plan validates the request and resolves it: the mode, the options' defaults (Options.defaults),
// the settle time (--no-settle wins; DefaultSettle when 0), and with -v 5 a log line for every
// API request of either cluster.
func (r Request) plan() (*plan, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	p := &plan{mode: r.mode(), opts: r.Options, source: r.Source, target: r.Target, fromDirectory: r.FromDirectory, toDirectory: r.ToDirectory}
	p.opts.defaults()
	if r.NoSettle {
		p.opts.Settle = 0
	} else if p.opts.Settle == 0 {
		p.opts.Settle = DefaultSettle
	}
	if l := p.opts.Log.V(5); l.Enabled() {
		logRequests := func(side string) func(string, string, int, time.Duration, error) {
			return func(method, url string, status int, elapsed time.Duration, err error) {
				if err != nil {
					l.Info("API request", "cluster", side, "method", method, "url", url, "error", err.Error(), "ms", elapsed.Milliseconds())
					return
				}
				l.Info("API request", "cluster", side, "method", method, "url", url, "status", status, "ms", elapsed.Milliseconds())
			}
		}
		p.source.OnRequest = logRequests("source")
		if p.target != nil {
			t := *p.target
			t.OnRequest = logRequests("target")
			p.target = &t
		}
	}
	return p, nil
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

// run connects the clusters the plan's mode needs (the source first, then the target) and runs
// the mode.
func (p *plan) run(ctx context.Context) (*Result, error) {
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

	src, err := cluster.Connect(ctx, p.source)
	if err != nil {
		return nil, err
	}
	res.Source = src.Config.Host
	switch p.mode {
	case modeAbandon:
		var dst *cluster.Client
		if p.target != nil {
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

// connectTarget connects the target cluster and names it in res.
func (p *plan) connectTarget(ctx context.Context, res *Result) (*cluster.Client, error) {
	dst, err := cluster.Connect(ctx, *p.target)
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
	if p.target == nil {
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
