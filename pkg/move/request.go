package move

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
)

// Flags is one `capctl move` as its flags say it: where from (a cluster or a backup directory),
// where to (a cluster or a directory), or a dry run. Request picks the one mode request they ask
// for; Connections is the Env a command runs it in.
type Flags struct {
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

// Validate checks the flags before anything connects (Request's checks).
func (f Flags) Validate() error {
	_, err := f.Request()
	return err
}

// errAbandonWith is --abandon beside a flag of another mode.
var errAbandonWith = errors.New("--abandon undoes an unfinished move: it cannot be combined with --dry-run, --resume, --restart-target, --plan-replacement or a directory (pass -n, and --to-kubeconfig for the move's target)")

// errReplacementWith is --plan-replacement without a target or beside a flag of another mode.
var errReplacementWith = errors.New("--plan-replacement plans the replacement of the source by the cluster of --to-kubeconfig and changes nothing: pass --to-kubeconfig, without --dry-run, --resume or a directory")

// Request is the mode request the flags ask for, checked: first the rules of which flags go
// together, then the chosen mode's own Validate.
func (f Flags) Request() (Request, error) {
	if err := cluster.CheckNamespace(f.Scope.Namespace); err != nil {
		return nil, err
	}
	switch {
	case f.Abandon && (f.DryRun || f.Resume || f.RestartTarget || f.FromDirectory != "" || f.ToDirectory != "" || f.PlanReplacement):
		return nil, errAbandonWith
	case f.PlanReplacement && (f.Target == nil || f.DryRun || f.FromDirectory != "" || f.ToDirectory != "" || f.Resume):
		return nil, errReplacementWith
	case f.FromDirectory != "" && f.Source.Kubeconfig != "":
		return nil, fmt.Errorf("--from-directory restores into --to-kubeconfig; --kubeconfig (the source) cannot be used with it")
	case f.Target != nil && sameKubeconfig(f.Source, *f.Target):
		return nil, fmt.Errorf("--to-kubeconfig is the source kubeconfig (%s, same context): the target must be another management cluster", f.Target.Kubeconfig)
	case f.FromDirectory != "" && f.ToDirectory != "":
		return nil, fmt.Errorf("--from-directory and --to-directory cannot be used together")
	case f.ToDirectory != "" && f.Target != nil:
		return nil, fmt.Errorf("--to-directory and --to-kubeconfig cannot be used together")
	case f.FromDirectory != "" && f.Target == nil && !f.DryRun && !f.hasScope():
		return nil, fmt.Errorf("--from-directory needs the target cluster: pass --to-kubeconfig")
	case f.Target == nil && f.ToDirectory == "" && f.FromDirectory == "" && !f.DryRun && !f.Abandon:
		return nil, fmt.Errorf("please specify a target cluster using the --to-kubeconfig flag when not using --dry-run, --to-directory or --from-directory")
	case f.DryRun && f.ToDirectory != "":
		return nil, fmt.Errorf("--dry-run writes nothing; it cannot be used with --to-directory")
	}
	req := f.mode()
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return req, nil
}

func (f Flags) hasScope() bool {
	return f.Scope.Namespace != "" || f.Scope.AllNamespaces || len(f.Scope.Clusters) > 0
}

// mode is the request of the flags' mode.
func (f Flags) mode() Request {
	switch {
	case f.FromDirectory != "":
		return &RestoreRequest{Directory: f.FromDirectory, DryRun: f.DryRun, NoSettle: f.NoSettle, Options: f.Options}
	case f.Abandon:
		return &AbandonRequest{Options: f.Options}
	case f.PlanReplacement:
		return &ReplacementRequest{Options: f.Options}
	case f.DryRun:
		return &DryRunRequest{Options: f.Options}
	case f.ToDirectory != "":
		return &BackupRequest{Directory: f.ToDirectory, Options: f.Options}
	}
	return &MoveRequest{Options: f.Options, NoSettle: f.NoSettle}
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

// Connections is the env.Env a command runs the request in: the source (Source) and the target
// (Target) clusters, each connected when the request's mode first needs it (a restore from a
// directory never reaches a source), with -v 5 a log line for every API request of either.
func (f Flags) Connections() env.Env {
	src, dst := f.Source, f.Target
	if l := f.Log.V(5); l.Enabled() {
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
	e := env.Env{Log: f.Log, Dial: func(ctx context.Context) (*cluster.Client, error) { return cluster.Connect(ctx, src) }}
	if dst != nil {
		e.DialTarget = func(ctx context.Context) (*cluster.Client, error) { return cluster.Connect(ctx, *dst) }
	}
	return e
}
