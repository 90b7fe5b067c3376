package describe

import (
	"context"
	"time"

	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
)

// RunCluster is `capctl describe cluster NAME` on the Env's management cluster, the namespace
// resolved (the request's, else the kubeconfig context's): the cluster's tree (Discover).
func RunCluster(ctx context.Context, e env.Env, req ClusterRequest) (*Tree, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c, ns, err := e.SingleIn(req.Namespace)
	if err != nil {
		return nil, err
	}
	req.Namespace = ns
	return Discover(ctx, c, req)
}

// ExitCode is 3 for a tree missing a kind it could not read (a partial view), else 0.
func (t *Tree) ExitCode() int { return multicluster.ViewExit(!t.Partial(), false, false) }

// DefaultWatchInterval is how often `describe cluster --watch` reads the cluster.
const DefaultWatchInterval = 2 * time.Second
