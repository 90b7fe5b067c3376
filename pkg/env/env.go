// Package env is what every feature verb runs in: `Run(ctx, env.Env, Request) (*Result, error)`.
// The command factory builds one Env per run (helm's action.Configuration plays this part);
// tests build it over envtest or live management clusters. A verb reads its management clusters,
// progress and clock from here and connects to nothing by itself.
package env

import (
	"context"
	"fmt"
	"time"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/multicluster"
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
