package multicluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
)

// Parallel bounds how many management clusters are connected to and read at once: each read is
// a few lists, so a handful at a time keeps a large estate's run short without a burst of
// connections.
const Parallel = 8

// Member is one chosen management cluster: its client, or why it could not be reached.
type Member struct {
	// Context is the kubeconfig context, the name every view shows (MANAGEMENT).
	Context string
	Client  *cluster.Client
	// Err is set when the API server did not answer; Client is nil then.
	Err error
	// UID is the kube-system namespace's UID: what tells two contexts of one cluster apart.
	UID string
}

// ErrSameCluster is returned when two chosen contexts reach the same cluster.
var ErrSameCluster = errors.New("two contexts reach the same cluster")

// Open resolves the selection against the kubeconfig (base.Kubeconfig, else the KUBECONFIG list
// merged by client-go's rules) and connects to every chosen context, Parallel at once. A context
// whose API server does not answer is a Member with Err; two contexts that reach the same
// cluster (same kube-system UID) refuse the whole run, as they would show and change its
// clusters twice.
func Open(ctx context.Context, base cluster.Options, sel Selection) ([]Member, error) {
	kc, err := cluster.LoadKubeconfig(base.Kubeconfig)
	if err != nil {
		return nil, err
	}
	names, err := Resolve(kc, sel)
	if err != nil {
		return nil, err
	}
	members := make([]Member, len(names))
	var g errgroup.Group
	g.SetLimit(Parallel)
	for i, name := range names {
		g.Go(func() error {
			members[i] = connect(ctx, base, name)
			return nil
		})
	}
	_ = g.Wait()
	if err := sameCluster(members); err != nil {
		return nil, err
	}
	return members, nil
}

func connect(ctx context.Context, base cluster.Options, name string) Member {
	opts := base
	opts.Context = name
	m := Member{Context: name}
	c, err := cluster.Connect(ctx, opts)
	if err != nil {
		m.Err = err
		return m
	}
	ns := &corev1.Namespace{}
	switch err := c.Get(ctx, client.ObjectKey{Name: "kube-system"}, ns); {
	case err == nil:
		m.UID = string(ns.UID)
	case apierrors.IsForbidden(err):
		// Allowed to read Cluster API objects but not namespaces: the cluster cannot be told
		// apart, so it is not compared.
	default:
		m.Err = fmt.Errorf("reading namespace kube-system of context %q (to tell management clusters apart): %w", name, err)
		return m
	}
	m.Client = c
	return m
}

// sameCluster refuses contexts that share a kube-system UID, naming every such group.
func sameCluster(members []Member) error {
	byUID := map[string][]string{}
	for _, m := range members {
		if m.UID != "" {
			byUID[m.UID] = append(byUID[m.UID], m.Context)
		}
	}
	var groups []string
	for uid, ctxs := range byUID {
		if len(ctxs) > 1 {
			groups = append(groups, fmt.Sprintf("%s (kube-system UID %s)", strings.Join(quoteAll(ctxs), " and "), uid))
		}
	}
	if len(groups) == 0 {
		return nil
	}
	sort.Strings(groups)
	return fmt.Errorf("%w: contexts %s; name each management cluster once", ErrSameCluster, strings.Join(groups, "; "))
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}
