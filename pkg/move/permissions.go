package move

import (
	"context"
	"fmt"
	"strings"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
)

// ErrPermissions is returned when a user lacks permissions a move needs.
var ErrPermissions = fmt.Errorf("missing permissions")

// checkPermissions asks both clusters (SelfSubjectAccessReview) for every verb the move will use
// on every kind of the graph, before the first write, and lists everything missing at once: a
// move that found a missing permission half-way left paused objects in the target.
func checkPermissions(ctx context.Context, src, dst *cluster.Client, g *Graph, scope Scope) error {
	cmd, err := authz.Lookup("move")
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var kinds []string
	for _, n := range g.Moved() {
		gvk := n.Obj.GroupVersionKind()
		m, err := src.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("source cluster %s: resolving %s: %w", src.Config.Host, gvk, err)
		}
		gr := strings.TrimSuffix(m.Resource.Resource+"."+m.Resource.Group, ".")
		if !seen[gr] {
			seen[gr] = true
			kinds = append(kinds, gr)
		}
	}
	ns := ""
	if !scope.AllNamespaces {
		ns = scope.Namespace
	}
	x := authz.Expansion{Namespace: ns, Kinds: map[string][]string{authz.EveryMovedKind: kinds}}
	var problems []string
	for _, side := range []struct {
		side authz.Side
		c    *cluster.Client
	}{{authz.Source, src}, {authz.Target, dst}} {
		missing, err := authz.Check(ctx, side.c, cmd.Permissions(side.side, x))
		if err != nil {
			return fmt.Errorf("%s %s: %w", side.side, side.c.Config.Host, err)
		}
		if len(missing) == 0 {
			continue
		}
		var lines []string
		for _, p := range missing {
			lines = append(lines, "    - "+p.String())
		}
		problems = append(problems, fmt.Sprintf("  in the %s %s (%d):\n%s\n%s", side.side, side.c.Config.Host, len(missing), strings.Join(lines, "\n"),
			indent(authz.Snippet("capctl-move", missing), "    ")))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: capctl move would fail half-way; nothing was changed. Grant these first (or run `capctl auth can-i move` to check again):\n%s",
			ErrPermissions, strings.Join(problems, "\n"))
	}
	return nil
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}
