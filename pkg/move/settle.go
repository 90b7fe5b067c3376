package move

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
)

// DefaultSettle is how long `capctl move` watches the moved clusters in the target afterwards.
const DefaultSettle = 60 * time.Second

// ErrNotSettled is returned when a moved cluster did not stay as it was during the settle period.
var ErrNotSettled = errors.New("moved clusters did not settle in the target")

// Kinds of settle problems.
const (
	SettleMachineCreated    = "machine-created"
	SettleMachineDeleted    = "machine-deleted"
	SettleProviderIDChanged = "provider-id-changed"
	SettleLostAvailable     = "lost-available"
)

// ClusterState is what the settle check compares for one Cluster: its Machines (name to
// spec.providerID) and whether it is Available.
type ClusterState struct {
	Machines  map[string]string `json:"machines"`
	Available bool              `json:"available"`
}

// SettleSnapshot is the state of a set of Clusters, by namespace/name.
type SettleSnapshot map[string]ClusterState

// SettleProblem is one change of a moved cluster after the move.
type SettleProblem struct {
	Cluster string `json:"cluster"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// SettleReport is what the settle check saw.
type SettleReport struct {
	Seconds  float64         `json:"seconds"`
	Clusters int             `json:"clusters"`
	Polls    int             `json:"polls"`
	Problems []SettleProblem `json:"problems,omitempty"`
}

// SnapshotClusters builds the settle state of the named Clusters (namespace/name) from objects:
// Clusters and Machines of either contract; a Machine belongs to the Cluster its spec.clusterName
// names in its namespace.
func SnapshotClusters(clusters []string, objs []*unstructured.Unstructured) SettleSnapshot {
	s := SettleSnapshot{}
	for _, c := range clusters {
		s[c] = ClusterState{Machines: map[string]string{}}
	}
	for _, o := range objs {
		if o.GroupVersionKind().Group != contract.Group {
			continue
		}
		switch o.GetKind() {
		case "Cluster":
			if st, ok := s[o.GetNamespace()+"/"+o.GetName()]; ok {
				st.Available = conditionTrue(o.Object, "Available")
				s[o.GetNamespace()+"/"+o.GetName()] = st
			}
		case "Machine":
			cn, _, _ := unstructured.NestedString(o.Object, "spec", "clusterName")
			if st, ok := s[o.GetNamespace()+"/"+cn]; ok {
				pid, _, _ := unstructured.NestedString(o.Object, "spec", "providerID")
				st.Machines[o.GetName()] = pid
			}
		}
	}
	return s
}

// CompareSettle lists how after differs from before: Machines created or deleted, a Machine's
// spec.providerID changed, and (when final: availability is judged at the end of the period,
// once the target's controllers had time to report it) a Cluster that was Available and is not.
func CompareSettle(before, after SettleSnapshot, final bool) []SettleProblem {
	var out []SettleProblem
	for _, c := range slices.Sorted(maps.Keys(before)) {
		b, a := before[c], after[c]
		for _, m := range slices.Sorted(maps.Keys(a.Machines)) {
			pid, was := b.Machines[m]
			switch {
			case !was:
				out = append(out, SettleProblem{c, SettleMachineCreated, fmt.Sprintf("Machine %s was created after the move (a rollout, or infrastructure re-created instead of adopted)", m)})
			case pid != a.Machines[m]:
				out = append(out, SettleProblem{c, SettleProviderIDChanged, fmt.Sprintf("Machine %s changed spec.providerID from %q to %q (its infrastructure was re-created)", m, pid, a.Machines[m])})
			}
		}
		for _, m := range slices.Sorted(maps.Keys(b.Machines)) {
			if _, ok := a.Machines[m]; !ok {
				out = append(out, SettleProblem{c, SettleMachineDeleted, fmt.Sprintf("Machine %s was deleted after the move", m)})
			}
		}
		if final && b.Available && !a.Available {
			out = append(out, SettleProblem{c, SettleLostAvailable, "was Available before the move and is not Available in the target at the end of the settle period"})
		}
	}
	return out
}

// settle watches the moved clusters in the target for opts.Settle, polling every
// opts.PollInterval, and compares each look with their state before the move (g: the source as
// read). Machine changes seen at any poll are kept; availability is judged at the last one.
func (m *mover) settle(ctx context.Context, g *Graph) (*SettleReport, error) {
	var clusters []string
	var pre []*unstructured.Unstructured
	for _, n := range g.Moved() {
		if isClusterNode(n) && !n.KeepInSource {
			clusters = append(clusters, n.Ref.Namespace+"/"+n.Ref.Name)
		}
		pre = append(pre, n.Obj)
	}
	rep := &SettleReport{Clusters: len(clusters)}
	if len(clusters) == 0 {
		return rep, nil
	}
	before := SnapshotClusters(clusters, pre)
	var types []TypeInfo
	for _, n := range m.tg.Moved() {
		if isClusterNode(n) {
			gv := n.Obj.GroupVersionKind().GroupVersion()
			types = []TypeInfo{{GVK: gv.WithKind("Cluster"), Namespaced: true}, {GVK: schema.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: "Machine"}, Namespaced: true}}
			break
		}
	}
	nsSet := map[string]bool{}
	for _, c := range clusters {
		nsSet[c[:strings.Index(c, "/")]] = true
	}
	namespaces := slices.Sorted(maps.Keys(nsSet))
	seen := map[SettleProblem]bool{}
	var last SettleSnapshot
	start := m.opts.Now()
	m.opts.Log.Info("Watching the moved clusters in the target", "clusters", len(clusters), "period", m.opts.Settle.String())
	err := cluster.Poll(ctx, m.opts.PollInterval, m.opts.Settle, func(ctx context.Context) (bool, error) {
		var objs []unstructured.Unstructured
		err := cluster.CheckRead(ctx, func(ctx context.Context) (err error) {
			objs, err = listAll(ctx, m.dst, types, namespaces, nil, restoredFieldOwners)
			return err
		})
		if err != nil {
			return false, fmt.Errorf("watching the moved clusters in the target %s: %w", m.dst.Config.Host, err)
		}
		ptrs := make([]*unstructured.Unstructured, len(objs))
		for i := range objs {
			ptrs[i] = &objs[i]
		}
		last = SnapshotClusters(clusters, ptrs)
		rep.Polls++
		for _, p := range CompareSettle(before, last, false) {
			if !seen[p] {
				seen[p] = true
				rep.Problems = append(rep.Problems, p)
			}
		}
		return false, nil
	})
	rep.Seconds = m.opts.Now().Sub(start).Seconds()
	if err != nil && !errors.Is(err, cluster.ErrTimedOut) {
		return rep, err
	}
	if last != nil {
		for _, p := range CompareSettle(before, last, true) {
			if p.Kind == SettleLostAvailable {
				rep.Problems = append(rep.Problems, p)
			}
		}
	}
	return rep, nil
}

// WriteSettle prints what the settle check saw, for people.
func WriteSettle(w io.Writer, r *SettleReport) {
	if len(r.Problems) == 0 {
		fmt.Fprintf(w, "Settled: for %.0fs after the move (%d looks) the %d moved clusters kept their Machines and provider IDs, and those Available before stayed Available.\n", r.Seconds, r.Polls, r.Clusters)
		return
	}
	fmt.Fprintf(w, "NOT settled: in the %.0fs after the move the target reported %d change(s):\n", r.Seconds, len(r.Problems))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  Cluster %s: %s\n", p.Cluster, p.Message)
	}
}
