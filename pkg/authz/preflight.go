package authz

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrPermissions marks a command refused before its first write because the user lacks
// permissions it would use (errors.Is works on every PreflightError).
var ErrPermissions = errors.New("missing permissions")

// Cluster is one cluster a command will write to, for Preflight.
type Cluster struct {
	Side   Side
	Client client.Client
	// Host is the cluster's address, shown in the refusal.
	Host string
}

// PreflightError is a refusal before the first write: what each cluster lacks.
type PreflightError struct {
	// Command is the table entry ("init", "move", ...).
	Command string
	Sides   []SideResult
}

func (e *PreflightError) Error() string {
	var parts []string
	for _, s := range e.Sides {
		if len(s.Missing) == 0 {
			continue
		}
		lines := make([]string, 0, len(s.Missing))
		for _, p := range s.Missing {
			lines = append(lines, "    - "+p.String())
		}
		where := string(s.Side)
		if s.Host != "" {
			where += " " + s.Host
		}
		parts = append(parts, fmt.Sprintf("  in the %s (%d):\n%s\n%s", where, len(s.Missing), strings.Join(lines, "\n"),
			indent(Snippet("capctl-"+strings.ReplaceAll(e.Command, " ", "-"), s.Missing), "    ")))
	}
	return fmt.Sprintf("%v: capctl %s would fail half-way; nothing was changed. Grant these first (or run `capctl auth can-i %s` to check again):\n%s",
		ErrPermissions, e.Command, e.Command, strings.Join(parts, "\n"))
}

// Unwrap makes errors.Is(err, ErrPermissions) true.
func (e *PreflightError) Unwrap() error { return ErrPermissions }

// Missing is every permission lacking, over all clusters.
func (e *PreflightError) Missing() []Permission {
	var out []Permission
	for _, s := range e.Sides {
		out = append(out, s.Missing...)
	}
	return out
}

// Preflight asks each cluster (SelfSubjectAccessReview) for every permission the command's rules
// in the table give for that cluster's side, placeholders expanded by x, and refuses with every
// missing permission at once (a *PreflightError) before the command writes anything. A command
// that found a missing permission half-way left a cluster changed (paused objects in a move's
// target, an init without its inventory); the table is the one list both this check and
// docs/guides/permissions.md come from.
func Preflight(ctx context.Context, command string, x Expansion, clusters ...Cluster) error {
	cmd, err := Lookup(command)
	if err != nil {
		return err
	}
	refusal := &PreflightError{Command: cmd.Name}
	for _, cl := range clusters {
		missing, err := Check(ctx, cl.Client, cmd.Permissions(cl.Side, x))
		if err != nil {
			return fmt.Errorf("%s %s: %w", cl.Side, cl.Host, err)
		}
		if len(missing) > 0 {
			refusal.Sides = append(refusal.Sides, SideResult{Side: cl.Side, Host: cl.Host, Checked: true, Missing: missing})
		}
	}
	if len(refusal.Sides) > 0 {
		return refusal
	}
	return nil
}

// Resources names the resources ("plural.group", sorted, once each) of the objects' kinds, as a
// placeholder's expansion: through mapper for the kinds the server serves, and through the
// CustomResourceDefinitions among objs and extraCRDs for the kinds they will define (a
// provider's own kinds before its CRDs are installed). A kind neither knows is an error naming it.
func Resources(mapper meta.RESTMapper, objs []unstructured.Unstructured, extraCRDs ...unstructured.Unstructured) ([]string, error) {
	defined := map[schema.GroupKind]string{}
	for _, set := range [][]unstructured.Unstructured{objs, extraCRDs} {
		for i := range set {
			u := &set[i]
			if u.GetKind() != "CustomResourceDefinition" || u.GroupVersionKind().Group != "apiextensions.k8s.io" {
				continue
			}
			group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
			plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
			if kind != "" && plural != "" {
				defined[schema.GroupKind{Group: group, Kind: kind}] = strings.TrimSuffix(plural+"."+group, ".")
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	// One mapping per kind, not per object: a move asks about tens of thousands of objects of a
	// dozen kinds, and each mapping allocates.
	mapped := map[schema.GroupVersionKind]bool{}
	for i := range objs {
		gvk := objs[i].GroupVersionKind()
		if mapped[gvk] {
			continue
		}
		mapped[gvk] = true
		name, ok := defined[gvk.GroupKind()]
		if !ok {
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return nil, fmt.Errorf("naming the resource of %s for the permission check: %w", gvk, err)
			}
			name = strings.TrimSuffix(m.Resource.Resource+"."+m.Resource.Group, ".")
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}
