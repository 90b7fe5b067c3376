package move

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
)

// ErrPermissions is returned when a user lacks permissions a move needs (authz's one marker).
var ErrPermissions = authz.ErrPermissions

// checkPermissions asks both clusters for every verb the move will use on every kind of the
// graph, before the first write, and lists everything missing at once: a move that found a
// missing permission half-way left paused objects in the target.
func checkPermissions(ctx context.Context, src, dst *cluster.Client, g *Graph, scope Scope) error {
	kinds, err := movedKinds(src, g)
	if err != nil {
		return err
	}
	ns := ""
	if !scope.AllNamespaces {
		ns = scope.Namespace
	}
	x := authz.Expansion{Namespace: ns, Kinds: kinds}
	return authz.Preflight(ctx, "move", x,
		authz.Cluster{Side: authz.Source, Client: src, Host: src.Config.Host},
		authz.Cluster{Side: authz.Target, Client: dst, Host: dst.Config.Host})
}

// movedKinds fills the table's placeholder for the graph: the kinds of every moved object.
func movedKinds(src *cluster.Client, g *Graph) (map[string][]string, error) {
	moved := g.Moved()
	objs := make([]unstructured.Unstructured, 0, len(moved))
	for _, n := range moved {
		objs = append(objs, *n.Obj)
	}
	kinds, err := authz.Resources(src.Mapper, objs)
	if err != nil {
		return nil, fmt.Errorf("source cluster %s: %w", src.Config.Host, err)
	}
	return map[string][]string{authz.EveryMovedKind: kinds}, nil
}

// CanI is `capctl auth can-i move`: the table's permissions with every moved kind filled from the
// same read-only graph the move builds for req.Namespace, and every kind that listing could not
// read (the move would refuse its incomplete view) named as missing; so a yes here is a move
// that passes its own checks. Where the graph cannot be built for want of a permission, the
// table's fixed rules name what is missing.
func CanI(ctx context.Context, e env.Env, req authz.CanIRequest) (*authz.CanIResult, error) {
	src, err := e.Single()
	if err != nil {
		return nil, err
	}
	req.Namespace = src.NamespaceOr(req.Namespace)
	g, err := Discover(ctx, src, Scope{Namespace: req.Namespace})
	var incomplete *authz.IncompleteError
	switch {
	case err == nil:
		if req.Kinds, err = movedKinds(src, g); err != nil {
			return nil, err
		}
	case errors.As(err, &incomplete):
		req.Unreadable = map[authz.Side][]authz.Unreadable{authz.Source: incomplete.Unreadable}
	case apierrors.IsForbidden(err) || errors.Is(err, ErrNamespaceNotFound):
		// Nothing to fill the placeholder with: it stays "checked when it runs".
	default:
		return nil, fmt.Errorf("reading the source to check the move's permissions: %w", err)
	}
	return authz.CanI(ctx, e, req)
}
