package move

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/conversion"
)

// ErrConversionLoss refuses a move whose conversion to the target's versions would not keep
// every value (pass AcceptConversionLoss, --accept-conversion-loss, to move anyway).
var ErrConversionLoss = fmt.Errorf("converting to the target's API versions would lose values")

// Conversion is one object the target stores at another version than the source: it is
// converted (pkg/convert) before it is written, and verified in its converted form.
type Conversion struct {
	Object Ref    `json:"object"`
	To     string `json:"to"`
	// Losses are the values the round trip (converted, then converted back) does not give back,
	// by path; status is not moved and not listed.
	Losses []string `json:"losses,omitempty"`
}

// Lost lists every loss as "Kind/namespace/name: path: what".
func Lost(cs []Conversion) []string {
	var out []string
	for _, c := range cs {
		for _, l := range c.Losses {
			out = append(out, c.Object.String()+": "+l)
		}
	}
	return out
}

// targetVersions maps each kind the target's Cluster API CRDs hold to their storage version.
func targetVersions(ctx context.Context, dst client.Reader) (map[schema.GroupKind]string, error) {
	types, err := DiscoverTypes(ctx, dst)
	if err != nil {
		return nil, err
	}
	out := make(map[schema.GroupKind]string, len(types))
	for _, t := range types {
		out[t.GVK.GroupKind()] = t.GVK.Version
	}
	return out, nil
}

// toTarget returns the graph as the target stores it: every object whose kind the target stores
// at another version converted to it, and owner references naming an owner that was converted
// pointing at the owner's new version. Objects the conversion cannot write (no conversion code,
// a failure) are problems that refuse the move. The result shares nothing the mover changes
// with g; it is g itself when nothing changes.
func toTarget(g *Graph, versions map[schema.GroupKind]string) (*Graph, []Conversion, []string) {
	var convs []Conversion
	var problems []string
	objs := map[types.UID]*unstructured.Unstructured{}
	ownerAPI := map[types.UID]string{} // converted owners' new apiVersion
	for _, n := range g.Moved() {
		gvk := n.Obj.GroupVersionKind()
		to, ok := versions[gvk.GroupKind()]
		if !ok || to == gvk.Version {
			continue
		}
		if to != conversion.TargetVersion {
			problems = append(problems, fmt.Sprintf("%s is stored at %s in the source and at %s in the target; capctl converts to %s only: move it with the provider's own tools", n.Ref, gvk.Version, to, conversion.TargetVersion))
			continue
		}
		out, rep := conversion.Object(n.Obj.Object)
		if rep.Error != "" || rep.Action != conversion.Converted {
			why := rep.Error
			if why == "" {
				why = strings.Join(rep.Warnings, "; ")
			}
			problems = append(problems, fmt.Sprintf("%s is stored at %s in the source and at %s in the target, and it cannot be converted: %s", n.Ref, gvk.Version, to, why))
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(mustJSON(out)); err != nil { // the numbers of an API object (int64)
			problems = append(problems, fmt.Sprintf("%s: reading its conversion: %v", n.Ref, err))
			continue
		}
		// Field owners name the fields of the source's version: they are not carried over.
		u.SetManagedFields(nil)
		c := Conversion{Object: n.Ref, To: u.GetAPIVersion()}
		for _, l := range rep.Warnings {
			if !strings.HasPrefix(l, "status.") && !strings.HasPrefix(l, "metadata.managedFields") {
				c.Losses = append(c.Losses, l)
			}
		}
		convs = append(convs, c)
		objs[n.Ref.UID] = u
		ownerAPI[n.Ref.UID] = u.GetAPIVersion()
	}
	for _, n := range g.Moved() {
		refs := n.Obj.GetOwnerReferences()
		changed := false
		for i := range refs {
			if av, ok := ownerAPI[refs[i].UID]; ok && refs[i].APIVersion != av {
				refs[i].APIVersion, changed = av, true
			}
		}
		if !changed {
			continue
		}
		u := objs[n.Ref.UID]
		if u == nil {
			u = n.Obj.DeepCopy()
			objs[n.Ref.UID] = u
		}
		u.SetOwnerReferences(refs)
	}
	if len(objs) == 0 {
		return g, nil, problems
	}
	tg := &Graph{Nodes: make(map[types.UID]*Node, len(g.Nodes)), Excluded: g.Excluded, Warnings: g.Warnings, Types: g.Types, Namespaces: g.Namespaces, Providers: g.Providers}
	for _, level := range g.Order {
		var l []*Node
		for _, n := range level {
			c := *n
			c.children = nil
			if u := objs[n.Ref.UID]; u != nil {
				c.Obj = u
				c.Ref.APIVersion = u.GetAPIVersion()
			}
			tg.Nodes[c.Ref.UID] = &c
			l = append(l, &c)
		}
		tg.Order = append(tg.Order, l)
	}
	sort.Slice(convs, func(i, j int) bool { return convs[i].Object.String() < convs[j].Object.String() })
	return tg, convs, problems
}

// WriteConversions prints the contract jump and each conversion, with what it loses, for people.
func WriteConversions(w io.Writer, cs Contracts, convs []Conversion) {
	if cs.Jump() {
		fmt.Fprintf(w, "\nContract: %s (the source stores Cluster API objects at %s, the target at %s).\n", cs, cs.Source, cs.Target)
	}
	if len(convs) == 0 {
		return
	}
	lossy := 0
	fmt.Fprintf(w, "Conversions (%d objects written at the target's version):\n", len(convs))
	for _, c := range convs {
		fmt.Fprintf(w, "  %s -> %s\n", c.Object, c.To)
		for _, l := range c.Losses {
			fmt.Fprintf(w, "      LOST %s\n", l)
			lossy++
		}
	}
	if lossy > 0 {
		fmt.Fprintf(w, "%d value(s) would not survive the conversion: the move refuses unless --accept-conversion-loss.\n", lossy)
	}
}
