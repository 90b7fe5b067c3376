// Package env is what every feature verb runs in: `Run(ctx, env.Env, Request) (*Result, error)`.
// The command factory builds one Env per run (helm's action.Configuration plays this part);
// tests build it over envtest or live management clusters. A verb reads its management clusters,
// progress and clock from here and connects to nothing by itself.
package env

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/repository"
)

// Env is the run's environment.
type Env struct {
	// Management are the management clusters the verb works on: the kubeconfig context's alone,
	// or those of --contexts/--all-contexts. A member that could not be reached carries its Err.
	Management []multicluster.Member
	// Chosen is set when the members came from --contexts/--all-contexts: views then name the
	// management cluster of every row, even when only one was chosen.
	Chosen bool
	// Progress, when set, is told what a long verb is doing (one short line each).
	Progress func(string)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Target is the other cluster of a command that has one (move's --to-kubeconfig), nil
	// otherwise.
	Target *cluster.Client
	// Dial and DialTarget connect the management cluster and the other cluster on first use, for
	// a verb whose mode decides whether it needs one (move from a backup directory needs no
	// source; generate cluster consults the management cluster only when its template asks).
	// Management and Target, when set, win: Cluster and TargetCluster return them.
	Dial, DialTarget func(context.Context) (*cluster.Client, error)
	// Log is the run's logger (warnings at level 0, details above); nil discards.
	Log *logging.Logger
	// Config is the configuration (clusterctl.yaml and the environment), read on first use.
	Config func(context.Context) (*config.Config, error)
	// Repository is the provider repositories of the configuration (clusterctl.yaml), built on
	// first use: a verb that needs no release does not read the configuration.
	Repository func(context.Context) (*repository.Client, error)
}

// Repositories is the run's provider repositories, or why there are none.
func (e Env) Repositories(ctx context.Context) (*repository.Client, error) {
	if e.Repository == nil {
		return nil, errors.New("this run has no provider repositories (no configuration was read)")
	}
	return e.Repository(ctx)
}

// Configuration is the run's configuration, or why there is none.
func (e Env) Configuration(ctx context.Context) (*config.Config, error) {
	if e.Config == nil {
		return nil, errors.New("this run has no configuration")
	}
	return e.Config(ctx)
}

// Optional is the run's one management cluster, or nil when it has none (a verb that can work
// without one, as `init list-images` for a first init).
func (e Env) Optional() (*cluster.Client, error) {
	if len(e.Management) == 0 {
		return nil, nil
	}
	return e.Single()
}

// Stepf reports a formatted progress line when someone listens.
func (e Env) Stepf(format string, args ...any) {
	if e.Progress != nil {
		e.Progress(fmt.Sprintf(format, args...))
	}
}

// One is the Env of one management cluster, named by its kubeconfig context.
func One(c *cluster.Client) Env {
	return Env{Management: []multicluster.Member{{Context: c.ContextName, Client: c}}}
}

// Several reports whether the verb runs over more than one management cluster, or over a
// chosen set (--contexts), whose views name the management cluster of every row.
func (e Env) Several() bool { return e.Chosen || len(e.Management) > 1 }

// Single is the client of the run's one management cluster (for a verb over one), or why it
// cannot be used.
func (e Env) Single() (*cluster.Client, error) {
	if len(e.Management) != 1 {
		return nil, fmt.Errorf("this run has %d management clusters, not one", len(e.Management))
	}
	m := e.Management[0]
	if m.Err != nil {
		return nil, m.Err
	}
	return m.Client, nil
}

// SingleIn is Single with a namespace resolved: namespace, else the kubeconfig context's (the
// rule of every verb over one management cluster that takes -n).
func (e Env) SingleIn(namespace string) (*cluster.Client, string, error) {
	c, err := e.Single()
	if err != nil {
		return nil, "", err
	}
	return c, c.NamespaceOr(namespace), nil
}

// Cluster is the run's one management cluster: Management's, else Dial's (connected now, once
// per call of Dial's own making), else why there is none.
func (e Env) Cluster(ctx context.Context) (*cluster.Client, error) {
	if len(e.Management) > 0 || e.Dial == nil {
		return e.Single()
	}
	return e.Dial(ctx)
}

// TargetCluster is the run's other cluster: Target, else DialTarget's, else why there is none.
func (e Env) TargetCluster(ctx context.Context) (*cluster.Client, error) {
	switch {
	case e.Target != nil:
		return e.Target, nil
	case e.DialTarget != nil:
		return e.DialTarget(ctx)
	}
	return nil, errors.New("this run has no target cluster")
}

// HasTarget reports whether the run has another cluster (Target or DialTarget).
func (e Env) HasTarget() bool { return e.Target != nil || e.DialTarget != nil }

// Logger is Log, or one that discards.
func (e Env) Logger() *logging.Logger {
	if e.Log != nil {
		return e.Log
	}
	return logging.Discard()
}

// Step reports a progress line when someone listens.
func (e Env) Step(msg string) {
	if e.Progress != nil {
		e.Progress(msg)
	}
}

// Clock is Now, or time.Now when unset.
func (e Env) Clock() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Open is how a command builds the Env: one management cluster, or the members of sel.
func Open(ctx context.Context, sel multicluster.Selection, one func(context.Context) (*cluster.Client, error), members func(context.Context, multicluster.Selection) ([]multicluster.Member, error)) (Env, error) {
	if sel.Enabled() {
		ms, err := members(ctx, sel)
		if err != nil {
			return Env{}, err
		}
		return Env{Management: ms, Chosen: true}, nil
	}
	c, err := one(ctx)
	if err != nil {
		return Env{}, err
	}
	return One(c), nil
}

// Over runs a verb over the Env's management clusters: many over several (a member that could
// not be read is in its view, not an error), one over the single one. The dispatch of every
// verb that works on one management cluster or several.
func Over[O, M any](ctx context.Context, e Env, one func(context.Context, *cluster.Client) (O, error), many func(context.Context, []multicluster.Member) (M, error)) (multicluster.OneOrMany[O, M], error) {
	var res multicluster.OneOrMany[O, M]
	if e.Several() {
		m, err := many(ctx, e.Management)
		if err != nil {
			return res, err
		}
		res.Many, res.Several = m, true
		return res, nil
	}
	c, err := e.Single()
	if err != nil {
		return res, err
	}
	o, err := one(ctx, c)
	if err != nil {
		return res, err
	}
	res.One = o
	return res, nil
}
