package authz

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// TestCanIOnAPIServerWithRBAC: the admin may run delete; a viewer is told every missing
// permission at once, with a ClusterRole granting them, which, applied and bound, makes the
// answer yes.
func TestCanIOnAPIServerWithRBAC(t *testing.T) {
	testenv.Integration(t)
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	ask := func(c client.Client) *CanIResult {
		t.Helper()
		res, err := canI(ctx, CanIRequest{Command: "delete", Clusters: map[Side]client.Client{Management: c}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := ask(env.Client); !res.OK() {
		t.Fatalf("the admin lacks permissions: %+v", res)
	}
	if err := env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}}}); err != nil {
		t.Fatal(err)
	}
	viewer := env.User(t, "viewer")
	res := ask(viewer)
	if res.OK() || len(res.Sides) != 1 || len(res.Sides[0].Missing) != 3 {
		t.Fatalf("want get, list and delete on providers missing for a viewer, got %+v", res)
	}
	var out strings.Builder
	_ = res.Render(&out)
	for _, want := range []string{"no, 3 permission(s) missing", "delete providers.clusterctl.cluster.x-k8s.io cluster-wide", "kind: ClusterRole"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the answer lacks %q:\n%s", want, out.String())
		}
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "grant"}, Rules: rulesOf(res.Sides[0].Missing)}
	if err := env.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "grant"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "grant"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "viewer"}}}); err != nil {
		t.Fatal(err)
	}
	if res := ask(viewer); !res.OK() {
		t.Fatalf("the granted snippet did not grant what was missing: %+v", res.Sides[0].Missing)
	}
}
