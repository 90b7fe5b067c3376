package testenv

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capctl/capctl/pkg/cluster"
)

// User adds a user (client-certificate authentication, with groups) to the server and returns a
// capctl client acting as that user: RBAC applies to it, unlike the admin Client.
func (e *Env) User(tb testing.TB, name string, groups ...string) *cluster.Client {
	tb.Helper()
	c, err := cluster.New(cluster.Options{Kubeconfig: e.UserKubeconfig(tb, name, groups...)})
	if err != nil {
		tb.Fatalf("connecting as %s: %v", name, err)
	}
	return c
}

// UserKubeconfig is User as a kubeconfig file (0600, in a folder of the test), for a capctl
// command run as that user.
func (e *Env) UserKubeconfig(tb testing.TB, name string, groups ...string) string {
	tb.Helper()
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		tb.Fatalf("adding user %s: %v", name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "kubeconfig-"+name)
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// GrantAllBut binds user to a ClusterRole with every verb on every discovered resource, except
// the verbs dropped per resource ("roles.rbac.authorization.k8s.io": {"list"}; no verbs drops
// the resource altogether): a user missing exactly those permissions.
func (e *Env) GrantAllBut(tb testing.TB, user string, dropped map[string][]string) {
	tb.Helper()
	lists, err := e.Client.Discovery.ServerPreferredResources()
	if err != nil {
		tb.Fatal(err)
	}
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	var rules []rbacv1.PolicyRule
	for _, l := range lists {
		group := ""
		if g, _, ok := strings.Cut(l.GroupVersion, "/"); ok {
			group = g
		}
		for _, r := range l.APIResources {
			verbs := all
			if drop, ok := dropped[strings.TrimSuffix(r.Name+"."+group, ".")]; ok {
				verbs = nil
				for _, v := range all {
					if len(drop) > 0 && !slices.Contains(drop, v) {
						verbs = append(verbs, v)
					}
				}
			}
			if len(verbs) > 0 {
				rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{r.Name}, Verbs: verbs})
			}
		}
	}
	name := "test-" + user
	if err := e.Client.Create(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}); err != nil {
		tb.Fatal(err)
	}
	e.Bind(tb, user, name)
}

// Revoke takes every verb on resource (plural, in API group) away from the ClusterRole that
// GrantAllBut made for user: a permission withdrawn while a command runs.
func (e *Env) Revoke(tb testing.TB, user, group, resource string) {
	tb.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "test-" + user}, role); err != nil {
		tb.Errorf("revoking %s from %s: %v", resource, user, err)
		return
	}
	rules := role.Rules[:0]
	for _, r := range role.Rules {
		if !slices.Contains(r.APIGroups, group) || !slices.Contains(r.Resources, resource) {
			rules = append(rules, r)
		}
	}
	role.Rules = rules
	if err := e.Client.Update(ctx, role); err != nil {
		tb.Errorf("revoking %s from %s: %v", resource, user, err)
	}
}

// Bind binds user to a ClusterRole (cluster-wide).
func (e *Env) Bind(tb testing.TB, user, clusterRole string) {
	tb.Helper()
	if err := e.Client.Create(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-" + user + "-" + clusterRole},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}); err != nil {
		tb.Fatal(err)
	}
}

// GrantIn gives user verbs on resource (plural, in API group) in one namespace only (a Role).
func (e *Env) GrantIn(tb testing.TB, user, namespace, group, resource string, verbs ...string) {
	tb.Helper()
	ctx := context.Background()
	name := "test-" + user + "-" + resource
	if err := e.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}}}); err != nil {
		tb.Fatal(err)
	}
	if err := e.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}); err != nil {
		tb.Fatal(err)
	}
}
