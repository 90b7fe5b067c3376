package authz

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Permission is one verb on one resource, cluster-wide (Namespace "") or in one namespace.
type Permission struct {
	Group     string `json:"group"`
	Resource  string `json:"resource"`
	Verb      string `json:"verb"`
	Namespace string `json:"namespace,omitempty"`
}

func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	where := "cluster-wide"
	if p.Namespace != "" {
		where = "in namespace " + p.Namespace
	}
	return fmt.Sprintf("%s %s %s", p.Verb, r, where)
}

// SplitResource splits "plural.group" (the form Unreadable and discovery use) into its parts.
func SplitResource(gr string) (group, resource string) {
	resource, group, _ = strings.Cut(gr, ".")
	return group, resource
}

// Check asks the server, with one SelfSubjectAccessReview per permission (a few at a time),
// which of perms the current user lacks. A verb allowed on every resource of every group is
// asked once, so a cluster-admin costs one review per verb and scope.
func Check(ctx context.Context, c client.Client, perms []Permission) ([]Permission, error) {
	perms = dedupe(perms)
	// The wildcard question first: most users either have everything or not.
	wild := map[Permission]bool{}
	for _, p := range perms {
		wild[Permission{Group: "*", Resource: "*", Verb: p.Verb, Namespace: p.Namespace}] = false
	}
	var mu sync.Mutex
	ask := func(list []Permission, record func(Permission, bool)) error {
		var g errgroup.Group
		g.SetLimit(8)
		for _, p := range list {
			g.Go(func() error {
				ok, err := allowed(ctx, c, p)
				if err != nil {
					return err
				}
				mu.Lock()
				record(p, ok)
				mu.Unlock()
				return nil
			})
		}
		return g.Wait()
	}
	wilds := make([]Permission, 0, len(wild))
	for p := range wild {
		wilds = append(wilds, p)
	}
	if err := ask(wilds, func(p Permission, ok bool) { wild[p] = ok }); err != nil {
		return nil, err
	}
	var rest []Permission
	for _, p := range perms {
		if !wild[Permission{Group: "*", Resource: "*", Verb: p.Verb, Namespace: p.Namespace}] {
			rest = append(rest, p)
		}
	}
	var missing []Permission
	if err := ask(rest, func(p Permission, ok bool) {
		if !ok {
			missing = append(missing, p)
		}
	}); err != nil {
		return nil, err
	}
	sortPermissions(missing)
	return missing, nil
}

func allowed(ctx context.Context, c client.Client, p Permission) (bool, error) {
	r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: p.Group, Resource: p.Resource, Verb: p.Verb, Namespace: p.Namespace},
	}}
	if err := c.Create(ctx, r); err != nil {
		return false, fmt.Errorf("asking the server whether you may %s (SelfSubjectAccessReview): %w", p, err)
	}
	return r.Status.Allowed, nil
}

func dedupe(perms []Permission) []Permission {
	seen := map[Permission]bool{}
	out := make([]Permission, 0, len(perms))
	for _, p := range perms {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	sortPermissions(out)
	return out
}

func sortPermissions(ps []Permission) {
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		return a.Verb < b.Verb
	})
}

// Snippet is a ready RBAC manifest granting perms: one ClusterRole for the cluster-wide ones
// and one Role per namespace, each with one rule per group and verb set. name names the roles
// (bind them to the user with a ClusterRoleBinding / RoleBinding).
func Snippet(name string, perms []Permission) string {
	if len(perms) == 0 {
		return ""
	}
	byNS := map[string][]Permission{}
	for _, p := range dedupe(perms) {
		byNS[p.Namespace] = append(byNS[p.Namespace], p)
	}
	nss := make([]string, 0, len(byNS))
	for ns := range byNS {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	var docs []string
	for _, ns := range nss {
		rules := rulesOf(byNS[ns])
		var obj any
		if ns == "" {
			obj = &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
				ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
		} else {
			obj = &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rules}
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			continue // rbac types always marshal
		}
		docs = append(docs, strings.Replace(string(b), "  creationTimestamp: null\n", "", 1))
	}
	return "# Grant with: kubectl apply -f - (then bind the role to the user)\n" + strings.Join(docs, "---\n")
}

// SnippetFor is the Snippet granting what the unreadable kinds were refused (empty when none
// was refused by RBAC).
func SnippetFor(us []Unreadable) string {
	var perms []Permission
	for _, u := range us {
		if !u.Forbidden {
			continue
		}
		g, r := SplitResource(u.Resource)
		perms = append(perms, Permission{Group: g, Resource: r, Verb: u.Verb, Namespace: u.Namespace})
	}
	return Snippet("capctl-missing-permissions", perms)
}

// rulesOf groups permissions into rules: per group, the resources sharing one verb set.
func rulesOf(perms []Permission) []rbacv1.PolicyRule {
	verbs := map[[2]string][]string{} // group, resource → verbs
	for _, p := range perms {
		k := [2]string{p.Group, p.Resource}
		verbs[k] = append(verbs[k], p.Verb)
	}
	type key struct{ group, verbs string }
	resources := map[key][]string{}
	for k, vs := range verbs {
		sort.Strings(vs)
		kk := key{k[0], strings.Join(vs, ",")}
		resources[kk] = append(resources[kk], k[1])
	}
	keys := make([]key, 0, len(resources))
	for k := range resources {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].group != keys[j].group {
			return keys[i].group < keys[j].group
		}
		return keys[i].verbs < keys[j].verbs
	})
	rules := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, k := range keys {
		rs := resources[k]
		sort.Strings(rs)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: rs, Verbs: strings.Split(k.verbs, ",")})
	}
	return rules
}
