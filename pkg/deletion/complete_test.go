package deletion

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
)

// clusterState digests what delete could change: every clusterctl-labelled object of every
// listable kind with its resourceVersion (inventory entries, RBAC, cert-manager objects and CRDs
// included), as the admin sees it.
func clusterState(t *testing.T, c *cluster.Client) string {
	t.Helper()
	if cd, ok := c.Discovery.(interface{ Invalidate() }); ok {
		cd.Invalidate()
	}
	types, unlisted, err := listableTypes(c.Discovery, nil)
	if err != nil || len(unlisted) > 0 {
		t.Fatalf("the admin cannot list everything: %v %v", err, unlisted)
	}
	found, unlisted, err := listAll(context.Background(), c, types, labels.Everything(), 8)
	if err != nil || len(unlisted) > 0 {
		t.Fatalf("the admin cannot list everything: %v %v", err, unlisted)
	}
	var lines []string
	for _, o := range found {
		if _, ok := o.labels["clusterctl.cluster.x-k8s.io"]; ok || o.GVK.Kind == "CustomResourceDefinition" {
			lines = append(lines, o.String())
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestDeleteRefusesAnIncompleteView: `delete --all` by a user who cannot list one kind (Roles),
// and by a viewer, refuses before the first delete, naming the kind and the verb, with a
// ClusterRole snippet granting it; so is a user who may list everything but not delete
// Deployments (the permission preflight); the cluster is unchanged. It used to delete what it saw and
// every inventory entry. An operator with every permission deletes.
func TestDeleteRefusesAnIncompleteView(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs a real API server")
	}
	env := setupProvidersEnv(t)
	admin := env.Client
	ctx := context.Background()
	all := Options{All: true, IncludeCertManager: false}
	before := clusterState(t, admin)

	cases := []struct {
		user, role string
		dropped    map[string][]string
		incomplete bool // refused as an incomplete view
		preflight  bool // refused by the permission preflight, before the first delete (a viewer, who cannot read the inventory, already there)
		want       []string
	}{
		{user: "no-list-roles", dropped: map[string][]string{"roles.rbac.authorization.k8s.io": {"list"}}, incomplete: true,
			want: []string{"roles.rbac.authorization.k8s.io (list", "resources:\n  - roles\n  verbs:\n  - list", "Nothing was changed"}},
		{user: "no-delete-deployments", dropped: map[string][]string{"deployments.apps": {"delete"}}, preflight: true,
			want: []string{"delete deployments.apps cluster-wide", "kind: ClusterRole", "nothing was changed"}},
		{user: "viewer", role: "view", preflight: true,
			want: []string{"reading the inventory", "delete providers.clusterctl.cluster.x-k8s.io cluster-wide", "kind: ClusterRole", "capctl auth can-i delete"}},
	}
	for _, tc := range cases {
		t.Run(tc.user, func(t *testing.T) {
			if tc.role == "" {
				env.GrantAllBut(t, tc.user, tc.dropped)
			} else {
				env.Bind(t, tc.user, tc.role)
			}
			c := env.User(t, tc.user)
			plan, err := BuildPlan(ctx, c, all)
			if err == nil {
				_, err = Apply(ctx, c, plan, 0, nil)
			}
			var ie *authz.IncompleteError
			var pe *authz.PreflightError
			if err == nil || tc.incomplete != errors.As(err, &ie) || tc.preflight != errors.As(err, &pe) {
				t.Fatalf("delete --all: want a refusal (incomplete view: %v, permission preflight: %v), got %v", tc.incomplete, tc.preflight, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal does not say %q:\n%v", w, err)
				}
			}
			if after := clusterState(t, admin); after != before {
				t.Fatalf("the refused delete changed the cluster:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}

	t.Run("operator", func(t *testing.T) {
		env.GrantAllBut(t, "operator", nil)
		c := env.User(t, "operator")
		plan, err := BuildPlan(ctx, c, all)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Unlisted) != 0 {
			t.Fatalf("an operator with every permission sees an incomplete view: %v", plan.Unlisted)
		}
		if _, err := Apply(ctx, c, plan, 0, nil); err != nil {
			t.Fatal(err)
		}
		if after := clusterState(t, admin); after == before {
			t.Fatal("the operator's delete changed nothing")
		}
	})
}
