package deletion

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/authz"
	capenv "github.com/capctl/capctl/pkg/env"
)

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
	all := Request{All: true, IncludeCertManager: false}

	cases := []struct {
		user, role string
		dropped    map[string][]string
		incomplete bool // refused as an incomplete view
		preflight  bool // refused by the permission preflight, before the first delete (a viewer, who cannot read the inventory, already there)
		want       []string
		// canIMissing is a permission `auth can-i delete` names as missing.
		canIMissing string
	}{
		{user: "no-list-roles", dropped: map[string][]string{"roles.rbac.authorization.k8s.io": {"list"}}, incomplete: true,
			want: []string{"roles.rbac.authorization.k8s.io (list", "resources:\n  - roles\n  verbs:\n  - list", "Nothing was changed"}, canIMissing: "list roles.rbac.authorization.k8s.io cluster-wide"},
		{user: "no-delete-deployments", dropped: map[string][]string{"deployments.apps": {"delete"}}, preflight: true,
			want: []string{"delete deployments.apps cluster-wide", "kind: ClusterRole", "nothing was changed"}, canIMissing: "delete deployments.apps cluster-wide"},
		{user: "viewer", role: "view", preflight: true,
			want: []string{"reading the inventory", "delete providers.clusterctl.cluster.x-k8s.io cluster-wide", "kind: ClusterRole", "capctl auth can-i delete"}, canIMissing: "delete providers.clusterctl.cluster.x-k8s.io cluster-wide"},
	}
	for _, tc := range cases {
		t.Run(tc.user, func(t *testing.T) {
			if tc.role == "" {
				env.GrantAllBut(t, tc.user, tc.dropped)
			} else {
				env.Bind(t, tc.user, tc.role)
			}
			c := env.User(t, tc.user)
			before := testenv.Snapshot(t, admin) // after the grant: every object, by resourceVersion
			// `capctl auth can-i delete` says no, naming what the delete below refuses for.
			res, err := CanI(ctx, capenv.One(c), authz.CanIRequest{Command: "delete"})
			if err != nil || res.OK() || !strings.Contains(fmt.Sprint(res.Sides[0].Missing), tc.canIMissing) {
				t.Errorf("can-i delete: %+v %v, want %q missing", res, err, tc.canIMissing)
			}
			plan, err := buildPlan(ctx, c, all)
			if err == nil {
				_, err = apply(ctx, c, plan, 0, nil)
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
			testenv.Unchanged(t, admin, before, "the refused delete")
		})
	}

	t.Run("operator", func(t *testing.T) {
		env.GrantAllBut(t, "operator", nil)
		c := env.User(t, "operator")
		res, err := CanI(ctx, capenv.One(c), authz.CanIRequest{Command: "delete"})
		if err != nil || !res.OK() || len(res.Sides[0].RunTime) != 0 {
			t.Errorf("can-i delete for an operator: %+v %v, want a yes with nothing left to the run", res, err)
		}
		before := testenv.Snapshot(t, admin)
		plan, err := buildPlan(ctx, c, all)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Unlisted) != 0 {
			t.Fatalf("an operator with every permission sees an incomplete view: %v", plan.Unlisted)
		}
		if _, err := apply(ctx, c, plan, 0, nil); err != nil {
			t.Fatal(err)
		}
		if d := before.Diff(testenv.Snapshot(t, admin)); len(d) == 0 {
			t.Fatal("the operator's delete changed nothing")
		}
	})
}
