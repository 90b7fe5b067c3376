package kubeconfig

import (
	"context"

	mgmt "github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
)

// GetRequest is `capctl get kubeconfig NAME`: a workload cluster of the management cluster.
type GetRequest struct {
	Cluster string
	// Namespace of the Cluster; empty: the kubeconfig context's.
	Namespace string
}

// Validate refuses a name or namespace that cannot name an object, before any call.
func (r GetRequest) Validate() error { return mgmt.CheckClusterRef(r.Cluster, r.Namespace) }

// Run reads the kubeconfig of the request's cluster on the Env's management cluster (Get).
func Run(ctx context.Context, e env.Env, req GetRequest) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c, ns, err := e.SingleIn(req.Namespace)
	if err != nil {
		return nil, err
	}
	return Get(ctx, c, ns, req.Cluster)
}

// ClustersRequest lists the Clusters of a namespace (shell completion of cluster names).
type ClustersRequest struct {
	// Namespace to list; empty: the kubeconfig context's.
	Namespace string
}

// Validate refuses a namespace that cannot name one.
func (r ClustersRequest) Validate() error { return mgmt.CheckNamespace(r.Namespace) }

// Names are Clusters' names, sorted.
type Names struct {
	Names []string `json:"names"`
}

// Clusters lists the names of the Clusters of the request's namespace on the Env's management
// cluster (ListClusters).
func Clusters(ctx context.Context, e env.Env, req ClustersRequest) (*Names, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c, ns, err := e.SingleIn(req.Namespace)
	if err != nil {
		return nil, err
	}
	names, err := ListClusters(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	return &Names{Names: names}, nil
}
