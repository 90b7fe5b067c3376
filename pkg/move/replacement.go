package move

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/inventory"
)

// Replacement is the runbook of a blue/green replacement of the source management cluster by
// the target: what to install there, what the move converts, what does not move, the move
// command and the checks it runs. Planning it reads both clusters and writes nothing.
type Replacement struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Scope  Scope  `json:"scope"`
	// TargetInstalled is false when the target has no Cluster API yet (the usual start).
	TargetInstalled bool      `json:"targetInstalled"`
	Contracts       Contracts `json:"contracts"`
	// Providers compares each source provider with the target's.
	Providers []ProviderStep `json:"providers"`
	// InitCommand installs what the target lacks ("" when nothing).
	InitCommand string `json:"initCommand,omitempty"`
	// Objects and Clusters the move takes; Conversions of them to the target's versions.
	Objects     int          `json:"objects"`
	Clusters    []string     `json:"clusters"`
	Conversions []Conversion `json:"conversions,omitempty"`
	// NotMoved: objects that look related but stay, and kinds outside the move graph.
	NotMoved     []Exclusion `json:"notMoved,omitempty"`
	OutsideGraph []string    `json:"outsideGraph,omitempty"`
	MoveCommand  string      `json:"moveCommand"`
	Checks       []string    `json:"checks"`
	// Problems the move would refuse with today (the target as it is now).
	Problems []string `json:"problems,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// ProviderStep is one source provider and what the target needs of it.
type ProviderStep struct {
	Provider      string `json:"provider"` // manifest label, e.g. infrastructure-docker
	Type          string `json:"type"`
	SourceVersion string `json:"sourceVersion"`
	TargetVersion string `json:"targetVersion,omitempty"`
	// Action: "install" (absent from the target), "upgrade" (older there), "ok".
	Action string `json:"action"`
}

// PlanReplacement writes the runbook for replacing src by dst for the scope's namespaces.
func PlanReplacement(ctx context.Context, src, dst *cluster.Client, opts Options) (*Replacement, error) {
	scope := opts.Scope.resolve(src)
	r := &Replacement{Source: src.Config.Host, Target: dst.Config.Host, Scope: scope}
	g, err := Plan(ctx, src, scope)
	if err != nil {
		return nil, err
	}
	r.Objects, r.NotMoved, r.Warnings = g.Count(), g.Excluded, g.Warnings
	for _, n := range g.Moved() {
		if isClusterNode(n) && !n.KeepInSource {
			r.Clusters = append(r.Clusters, n.Ref.Namespace+"/"+n.Ref.Name)
		}
	}
	sort.Strings(r.Clusters)
	if r.Contracts.Source, err = contract.ManagementContract(ctx, src); err != nil {
		return nil, fmt.Errorf("source cluster %s: %w", src.Config.Host, err)
	}
	r.Contracts.Target, err = contract.ManagementContract(ctx, dst)
	switch {
	case errors.Is(err, contract.ErrNotInstalled):
		r.Contracts.Target = contract.Current // what capctl init installs
	case err != nil:
		return nil, fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
	default:
		r.TargetInstalled = true
	}
	if contract.Compare(r.Contracts.Target, r.Contracts.Source) < 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("the target stores Clusters as %s, an older contract than the source's %s: a move never goes back; replace it with a management cluster on %s or newer", r.Contracts.Target, r.Contracts.Source, r.Contracts.Source))
	}

	var dstProviders []inventory.Provider
	if r.TargetInstalled {
		if dstProviders, err = inventory.List(ctx, dst); err != nil && !errors.Is(err, inventory.ErrNoInventory) {
			return nil, fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
		}
	}
	var initArgs []string
	r.Providers = providerSteps(g.Providers, dstProviders)
	for i, step := range r.Providers {
		s := g.Providers[i]
		if step.Action == "install" {
			// Across a contract jump the target gets its providers' releases of the new contract
			// (the newest: capctl init picks it); otherwise the source's own versions.
			arg := s.ProviderName
			if !r.Contracts.Jump() {
				arg += ":" + s.Version
			}
			initArgs = append(initArgs, s.Type.Flag()+" "+arg)
		}
	}
	if len(initArgs) > 0 {
		r.InitCommand = "capctl init --kubeconfig " + kubeconfigArg(dst) + " " + strings.Join(initArgs, " ")
	}

	// The conversions: with the target's CRDs when it has them, else those of the contract it
	// will be initialised at.
	var tv map[schema.GroupKind]string
	if r.TargetInstalled {
		if tv, err = targetVersions(ctx, dst); err != nil {
			return nil, fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
		}
	} else {
		tv = map[schema.GroupKind]string{}
		for _, n := range g.Moved() {
			if gvk := n.Obj.GroupVersionKind(); contract.IsClusterAPIGroup(gvk.Group) {
				tv[gvk.GroupKind()] = r.Contracts.Target
			}
		}
	}
	tg, convs, problems := toTarget(g, tv)
	r.Conversions = convs
	r.Problems = append(r.Problems, problems...)
	if r.TargetInstalled {
		if err := Preflight(ctx, dst, g, tg); err != nil {
			r.Problems = append(r.Problems, strings.TrimPrefix(err.Error(), "cannot start the move:\n  - "))
		}
	} else {
		r.Problems = append(r.Problems, provisioningProblems(g)...)
	}
	if r.OutsideGraph, err = outsideGraph(ctx, src); err != nil {
		return nil, err
	}

	where := "-n " + scope.Namespace
	if scope.AllNamespaces {
		where = "-A"
	}
	r.MoveCommand = fmt.Sprintf("capctl move --kubeconfig %s %s --to-kubeconfig %s", kubeconfigArg(src), where, kubeconfigArg(dst))
	if len(Lost(convs)) > 0 {
		r.MoveCommand += " --accept-conversion-loss"
	}
	r.Checks = []string{
		"before any write: the target's contract is the source's or newer, and it runs every source provider at the same or a newer version",
		"before any write: every moved kind is served by the target, every Cluster and Machine is provisioned, no moved object exists in the target yet, and both users may do what the move needs",
		"before any write: every object converts to the target's storage version and back without loss (or --accept-conversion-loss, recorded in the journal)",
		"the objects as read are kept in a journal in the source: an interrupted move is finished by running the same command again (or --resume)",
		"before the first delete: the target is compared with the converted pre-move copy, field by field (labels, annotations, finalizers, owners, spec, data)",
		fmt.Sprintf("after the move, for %s (--settle): no Machine created or deleted, no spec.providerID changed, no Cluster that was Available losing it", DefaultSettle),
	}
	return r, nil
}

// outsideGraph lists the source's kinds that look like Cluster API's but that a move does not
// copy: CRDs of a Cluster API group without clusterctl's label (not installed by clusterctl or
// capctl init).
func outsideGraph(ctx context.Context, src *cluster.Client) ([]string, error) {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := src.List(ctx, crds); err != nil {
		return nil, fmt.Errorf("listing the source's CRDs: %w", err)
	}
	var out []string
	for _, crd := range crds.Items {
		if _, labelled := crd.Labels[inventory.ClusterctlLabel]; labelled || !contract.IsClusterAPIGroup(crd.Spec.Group) || crd.Spec.Group == inventory.Group {
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s): CRD %s has no %s label, so its objects do not move; label the CRD (or each object %s) to move them", crd.Spec.Names.Kind, crd.Spec.Group, crd.Name, inventory.ClusterctlLabel, MoveLabel))
	}
	sort.Strings(out)
	return out, nil
}

func kubeconfigArg(c *cluster.Client) string {
	if c.KubeconfigPath == "" {
		return "<kubeconfig>"
	}
	return c.KubeconfigPath
}

// WriteText prints the runbook for people.
func (r *Replacement) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "Blue/green replacement of %s by %s (%s)\n", r.Source, r.Target, r.Scope)
	fmt.Fprintf(w, "\n1. Contract: %s", r.Contracts.Source)
	if r.Contracts.Jump() {
		fmt.Fprintf(w, " -> %s (a contract jump: the move converts the objects)", r.Contracts.Target)
	}
	if !r.TargetInstalled {
		fmt.Fprintf(w, "; the target has no Cluster API yet (planned at %s)", r.Contracts.Target)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "\n2. Providers on the target:\n")
	for _, p := range r.Providers {
		have := p.TargetVersion
		if have == "" {
			have = "absent"
		}
		fmt.Fprintf(w, "   %-28s source %-9s target %-9s %s\n", p.Provider, p.SourceVersion, have, p.Action)
	}
	if r.InitCommand != "" {
		fmt.Fprintf(w, "   Install them (and cert-manager, which init adds) with:\n     %s\n", r.InitCommand)
	}
	fmt.Fprintf(w, "\n3. What moves: %d objects, %d Clusters", r.Objects, len(r.Clusters))
	if len(r.Clusters) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(first(r.Clusters, 10), ", "))
	}
	fmt.Fprintln(w)
	if len(r.Conversions) > 0 {
		fmt.Fprintf(w, "   %d objects are converted to the target's versions", len(r.Conversions))
		if lost := Lost(r.Conversions); len(lost) > 0 {
			fmt.Fprintf(w, "; %d value(s) would not survive:\n", len(lost))
			for _, l := range lost {
				fmt.Fprintf(w, "     LOST %s\n", l)
			}
		} else {
			fmt.Fprintln(w, ", all without loss (round-trip checked).")
		}
	}
	fmt.Fprintf(w, "\n4. What does not move:\n")
	fmt.Fprintf(w, "   Only Cluster API kinds, and the Secrets and ConfigMaps linked with them, move; the providers themselves, cert-manager and everything else stay.\n")
	for _, e := range r.NotMoved {
		fmt.Fprintf(w, "   %s: %s\n", e.Object, e.Reason)
	}
	for _, o := range r.OutsideGraph {
		fmt.Fprintf(w, "   %s\n", o)
	}
	fmt.Fprintf(w, "\n5. The move:\n     %s\n", r.MoveCommand)
	fmt.Fprintf(w, "   Look first with --dry-run added.\n")
	fmt.Fprintf(w, "\n6. The checks it runs:\n")
	for _, c := range r.Checks {
		fmt.Fprintf(w, "   - %s\n", c)
	}
	if len(r.Problems) > 0 {
		fmt.Fprintf(w, "\nThe move would be refused today:\n")
		for _, p := range r.Problems {
			fmt.Fprintf(w, "   - %s\n", p)
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warn)
	}
	return nil
}
