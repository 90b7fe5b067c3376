package move

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
)

// ErrPermissions is returned when a user lacks permissions a move needs (authz's one marker).
var ErrPermissions = authz.ErrPermissions

// checkPermissions asks both clusters for every verb the move will use on every kind of the
// graph, before the first write, and lists everything missing at once: a move that found a
// missing permission half-way left paused objects in the target.
func checkPermissions(ctx context.Context, src, dst *cluster.Client, g *Graph, scope Scope) error {
	moved := g.Moved()
	objs := make([]unstructured.Unstructured, 0, len(moved))
	for _, n := range moved {
		objs = append(objs, *n.Obj)
	}
	kinds, err := authz.Resources(src.Mapper, objs)
	if err != nil {
		return fmt.Errorf("source cluster %s: %w", src.Config.Host, err)
	}
	ns := ""
	if !scope.AllNamespaces {
		ns = scope.Namespace
	}
	x := authz.Expansion{Namespace: ns, Kinds: map[string][]string{authz.EveryMovedKind: kinds}}
	return authz.Preflight(ctx, "move", x,
		authz.Cluster{Side: authz.Source, Client: src, Host: src.Config.Host},
		authz.Cluster{Side: authz.Target, Client: dst, Host: dst.Config.Host})
}
