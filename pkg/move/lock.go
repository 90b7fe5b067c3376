package move

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/lease"
)

// LockName is the coordination.k8s.io Lease, in each namespace a move, backup or restore works
// on, that keeps a second operation off that namespace while the first runs. It lives in the
// cluster the operation pauses or fills: the source of a move or backup, the target of a restore.
const LockName = "capctl-move-lock"

// ErrLocked is returned when another operation holds a namespace's lock.
var ErrLocked = lease.ErrLocked

// acquireLock locks namespaces in c for one operation of this move run.
func acquireLock(ctx context.Context, c client.Client, namespaces []string, operation, target string, opts Options) (*lease.Set, context.Context, error) {
	lk, lctx, err := lease.Acquire(ctx, c, namespaces, lease.Info{Name: LockName, Labels: map[string]string{JournalLabel: ""},
		Operation: operation, Target: target, Scope: opts.Scope.String(), Duration: opts.LockDuration, Now: opts.Now})
	if apierrors.IsNotFound(err) {
		// The Lease could not be created: its namespace does not exist.
		return nil, ctx, fmt.Errorf("%w: namespace %s does not exist in the source cluster (%v); pass -n with an existing namespace or -A", ErrNamespaceNotFound, strings.Join(namespaces, ", "), err)
	}
	return lk, lctx, err
}

// graphNamespaces are the namespaces of a graph's namespaced objects.
func graphNamespaces(g *Graph) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range g.Moved() {
		if ns := n.Ref.Namespace; ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out
}

// overlaps tells whether an unfinished move's journal covers objects of scope.
func overlaps(j *journal, scope Scope) bool {
	return j.Scope.AllNamespaces || scope.AllNamespaces || j.Scope.Namespace == scope.Namespace || j.namespace == journalNamespace(scope)
}

// lockNamespaces are the namespaces a run locks before it reads its journal: the scope's
// namespace, the journal's for -A (the moved namespaces follow, as discovery finds them), and for
// a --resume that must find its journal, the namespace of the one unfinished move (several or
// none: the journal lookup says so, holding the default namespace meanwhile).
func lockNamespaces(ctx context.Context, c client.Reader, scope Scope, resumeAnywhere bool) []string {
	if resumeAnywhere {
		if js, err := listJournals(ctx, c); err == nil {
			var moves []*journal
			for _, j := range js {
				if j.Phase != phaseBackup {
					moves = append(moves, j)
				}
			}
			if len(moves) == 1 {
				return []string{moves[0].namespace}
			}
		}
	}
	return []string{journalNamespace(scope)}
}

// discoverLocked discovers the scope's graph and locks its namespaces; for -A, a namespace
// locked only after discovery is read again, so no object is taken from a namespace another run
// held while it was read.
func discoverLocked(ctx context.Context, c *cluster.Client, scope Scope, lk *lease.Set, view fieldOwners) (*Graph, error) {
	for attempt := 0; ; attempt++ {
		g, err := discover(ctx, c, scope, view)
		if err != nil {
			return nil, err
		}
		held := map[string]bool{}
		for _, ns := range lk.Namespaces() {
			held[ns] = true
		}
		if err := lk.Add(ctx, graphNamespaces(g)); err != nil {
			return nil, err
		}
		var added []string
		for _, ns := range lk.Namespaces() {
			if !held[ns] {
				added = append(added, ns)
			}
		}
		if len(added) == 0 {
			return g, nil
		}
		// A run killed between our journal check and our lock left its journal behind.
		js, err := listJournals(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, j := range js {
			if slices.Contains(added, j.namespace) {
				return nil, fmt.Errorf("%s (journal %s/%s) appeared while capctl locked the namespace: finish it first", j.unfinished(), j.namespace, JournalName)
			}
		}
		if attempt == 2 {
			return nil, fmt.Errorf("the namespaces holding Cluster API objects kept changing while capctl locked them (%v); try again", lk.Namespaces())
		}
	}
}
