package testenv

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/capctl/capctl/pkg/cluster"
)

// State is every object of an API server, by kind, namespace and name, with its UID and
// resourceVersion: two states are equal only if nothing was created, deleted, replaced or
// written in between. It is how a test proves that a refused command changed nothing: the
// inventory, RBAC, CRDs, namespaces, Secrets and every custom resource are in it, not only the
// kinds the command was expected to touch.
type State map[string]string

// stateNoise are objects the API server itself keeps writing with no command running: events,
// and the kube-apiserver's identity leases (renewed every few seconds).
func stateNoise(gk schema.GroupKind, ns, name string) bool {
	switch {
	case gk.Kind == "Event":
		return true
	case gk == schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"} && ns == "kube-system" && strings.HasPrefix(name, "apiserver-"):
		return true
	}
	return false
}

// Snapshot reads the State of c's API server (one metadata LIST per listable kind).
func Snapshot(tb testing.TB, c *cluster.Client) State {
	tb.Helper()
	if cd, ok := c.Discovery.(discovery.CachedDiscoveryInterface); ok {
		cd.Invalidate() // kinds a command defined since the last read are listed too
	}
	lists, err := c.Discovery.ServerPreferredResources()
	if err != nil {
		tb.Fatalf("discovering the kinds to snapshot: %v", err)
	}
	out := State{}
	ctx := context.Background()
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(gv.WithKind(r.Kind + "List"))
			if err := c.List(ctx, list); err != nil {
				tb.Fatalf("snapshot: listing %s: %v", r.Name, err)
			}
			gk := schema.GroupKind{Group: gv.Group, Kind: r.Kind}
			for _, o := range list.Items {
				if stateNoise(gk, o.Namespace, o.Name) {
					continue
				}
				out[fmt.Sprintf("%s %s/%s", gk, o.Namespace, o.Name)] = fmt.Sprintf("uid=%s rv=%s", o.UID, o.ResourceVersion)
			}
		}
	}
	return out
}

// Diff lists what changed from s to after: objects created, deleted or written, sorted.
func (s State) Diff(after State) []string {
	var out []string
	for k, v := range s {
		switch w, ok := after[k]; {
		case !ok:
			out = append(out, "deleted "+k)
		case w != v:
			out = append(out, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := s[k]; !ok {
			out = append(out, "created "+k)
		}
	}
	sort.Strings(out)
	return out
}

// Unchanged fails the test when c's API server changed since before (what was created,
// deleted or written is listed).
func Unchanged(tb testing.TB, c *cluster.Client, before State, what string) {
	tb.Helper()
	if d := before.Diff(Snapshot(tb, c)); len(d) > 0 {
		tb.Errorf("%s changed the cluster (%d object(s)):\n  %s", what, len(d), strings.Join(d, "\n  "))
	}
}
