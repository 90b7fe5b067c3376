package diagnose

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/provider"
)

// Severity says how bad a finding is. Errors and warnings make a cluster unhealthy (and the
// command's exit code non-zero); info findings do not.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Component is who has to act for a rule: a kind of provider (resolved to the installed one from
// the object that is stuck), or something outside Cluster API.
type Component string

// Components.
const (
	// ComponentCore: the core provider (cluster-api) controllers.
	ComponentCore Component = "core provider"
	// ComponentObject: the provider whose CRD defines the stuck object (bootstrap config,
	// infrastructure, control plane).
	ComponentObject Component = "provider of the object"
	// ComponentProvider: the provider the finding is about (management rules).
	ComponentProvider Component = "provider"
	// ComponentCertManager: cert-manager.
	ComponentCertManager Component = "cert-manager"
	// ComponentMachine: kubelet, cloud-init and kubeadm on the machine itself.
	ComponentMachine Component = "the machine (cloud-init, kubeadm, kubelet)"
	// ComponentAddons: whoever installs add-ons such as the CNI (a ClusterResourceSet or an
	// add-on provider); Cluster API installs none.
	ComponentAddons Component = "add-ons (ClusterResourceSet or add-on provider)"
	// ComponentWorkload: workloads of the workload cluster (their PodDisruptionBudgets).
	ComponentWorkload Component = "workload cluster"
	// ComponentNetwork: the network path from the management cluster to the workload API server.
	ComponentNetwork Component = "network path to the workload API server"
	// ComponentUser: a person or tool set something on purpose (a pause).
	ComponentUser Component = "whoever paused it"
)

// Stages order findings from the furthest upstream (what everything else waits for) down.
const (
	stageManagement = iota
	stagePaused
	stageMissing
	stageClusterInfra
	stageControlPlane
	stageBootstrap
	stageInfrastructure
	stageNodeJoin
	stageConnection
	stageNode
	stageDeleting
	stageRemediation
	stageFallback
)

// Rule is one row of the table: when Match finds objects in the stuck state, each becomes a
// finding with the explanation, the responsible component and the next commands.
type Rule struct {
	ID       string
	Severity Severity
	// Stage orders rules from upstream (management, pause) to downstream (drain, remediation).
	Stage int
	// Explanation is one sentence: why this state blocks the cluster.
	Explanation string
	Component   Component
	// Match is the predicate: the objects of the input in this rule's stuck state.
	Match func(in *Input) []Match
	// Next are text/template commands (see cmdData); lines that render empty are dropped.
	Next []string
	// Fallback rules only run when no other rule found an error.
	Fallback bool
}

// Match is one object a rule found stuck.
type Match struct {
	Kind, Namespace, Name string
	// Since is when the object entered the state (zero when unknown).
	Since time.Time
	// Summary says what is stuck, in a short phrase ("Machine x has been Pending").
	Summary string
	// Evidence: conditions (with their messages quoted) and facts that show the state.
	Evidence []string
	// ResponsibleKind is the "Kind.group" whose provider is responsible (ComponentObject).
	ResponsibleKind string
	// Provider is the manifest label of the provider the finding is about (ComponentProvider).
	Provider string
	// Vars are extra values for the Next templates (node, pdb, ...).
	Vars map[string]string
}

// Finding is one problem, as reported.
type Finding struct {
	Rule        string       `json:"rule"`
	Severity    Severity     `json:"severity"`
	Object      string       `json:"object"`
	Since       *time.Time   `json:"since,omitempty"`
	Summary     string       `json:"summary"`
	Explanation string       `json:"explanation"`
	Evidence    []string     `json:"evidence,omitempty"`
	Responsible *Responsible `json:"responsible,omitempty"`
	Next        []string     `json:"next,omitempty"`
	// Root marks the furthest-upstream error or warning: fix it first.
	Root bool `json:"root,omitempty"`
}

// Responsible is the component that has to act, with its provider when one is installed.
type Responsible struct {
	Component  Component     `json:"component"`
	Provider   string        `json:"provider,omitempty"` // manifest label, e.g. bootstrap-kubeadm
	Type       provider.Type `json:"type,omitempty"`
	Version    string        `json:"version,omitempty"`
	Namespace  string        `json:"namespace,omitempty"`
	Deployment string        `json:"deployment,omitempty"`
}

func (r *Responsible) String() string {
	if r.Provider == "" {
		return string(r.Component)
	}
	s := fmt.Sprintf("%s (%s %s", r.Component, r.Provider, r.Version)
	s = strings.TrimSpace(s)
	if r.Namespace != "" {
		s += ", namespace " + r.Namespace
	}
	if r.Deployment != "" {
		s += ", Deployment " + r.Deployment
	}
	return s + ")"
}

// Report is the diagnosis of one cluster.
type Report struct {
	Cluster   string    `json:"cluster"`
	Namespace string    `json:"namespace"`
	Healthy   bool      `json:"healthy"`
	Findings  []Finding `json:"findings"`
	// Workload says whether the workload cluster could be read.
	Workload *WorkloadSummary `json:"workload,omitempty"`
	// ManagementError says why the management side (providers, cert-manager) was not checked.
	ManagementError string `json:"managementError,omitempty"`
	// Unread are the kinds that could not be read (RBAC): the view is partial. NotChecked are the
	// rules that needed them; while any is left, the report is not healthy.
	Unread     []authz.Unreadable `json:"unread,omitempty"`
	NotChecked []NotChecked       `json:"notChecked,omitempty"`
}

// Partial tells whether some kind the diagnosis reads could not be read: the view misses it.
func (r *Report) Partial() bool { return len(r.Unread) > 0 }

// WorkloadSummary is what the report says about reading the workload cluster.
type WorkloadSummary struct {
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	Nodes     int    `json:"nodes"`
	CNI       bool   `json:"cniRunning"`
}

// Problems counts the findings that make the cluster unhealthy (errors and warnings).
func (r *Report) Problems() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity != SeverityInfo {
			n++
		}
	}
	return n
}

// Root returns the root finding, if any.
func (r *Report) Root() *Finding {
	for i := range r.Findings {
		if r.Findings[i].Root {
			return &r.Findings[i]
		}
	}
	return nil
}

// Run applies every rule of the table to the input.
func Run(in *Input) *Report {
	return runRules(in, Rules())
}

func runRules(in *Input, rules []Rule) *Report {
	if in.StuckAfter == 0 {
		in.StuckAfter = DefaultStuckAfter
	}
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	rep := &Report{Findings: []Finding{}}
	if in.Tree != nil && in.Tree.Root != nil {
		rep.Cluster, rep.Namespace = in.Tree.Root.Name, in.Tree.Root.Namespace
	}
	if w := in.Workload; w != nil {
		rep.Workload = &WorkloadSummary{Reachable: w.Reachable, Error: w.Error, Nodes: len(w.Nodes), CNI: w.CNIRunning()}
	}
	type staged struct {
		f     Finding
		stage int
	}
	var found []staged
	apply := func(r Rule) {
		for _, m := range r.Match(in) {
			found = append(found, staged{f: in.finding(r, m), stage: r.Stage})
		}
	}
	for _, r := range rules {
		if !r.Fallback {
			apply(r)
		}
	}
	// The fallback explains an unavailable Cluster only when no rule found an error (a warning,
	// such as a workload cluster capctl could not read, does not explain it).
	explained := false
	for _, s := range found {
		if s.f.Severity == SeverityError {
			explained = true
		}
	}
	if !explained {
		for _, r := range rules {
			if r.Fallback {
				apply(r)
			}
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].stage != found[j].stage {
			return found[i].stage < found[j].stage
		}
		return found[i].f.Object < found[j].f.Object
	})
	for _, s := range found {
		rep.Findings = append(rep.Findings, s.f)
	}
	for i := range rep.Findings {
		if rep.Findings[i].Severity != SeverityInfo {
			rep.Findings[i].Root = true
			break
		}
	}
	if in.Management != nil {
		rep.Unread = append(rep.Unread, in.Management.Unread...)
	}
	if in.Tree != nil {
		rep.Unread = append(rep.Unread, in.Tree.Unread...)
	}
	rep.NotChecked = notChecked(in)
	// What could not be checked is not known to be fine.
	rep.Healthy = rep.Problems() == 0 && len(rep.NotChecked) == 0
	return rep
}

func (in *Input) finding(r Rule, m Match) Finding {
	f := Finding{
		Rule: r.ID, Severity: r.Severity, Summary: m.Summary, Explanation: r.Explanation,
		Evidence: m.Evidence, Object: objectName(m.Kind, m.Namespace, m.Name),
	}
	if !m.Since.IsZero() {
		t := m.Since
		f.Since = &t
	}
	f.Responsible = in.responsible(r.Component, m)
	f.Next = in.commands(r, m, f.Responsible)
	return f
}

func objectName(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// responsible resolves a component to the installed provider, when there is one.
func (in *Input) responsible(c Component, m Match) *Responsible {
	r := &Responsible{Component: c}
	var p *ProviderStatus
	switch c {
	case ComponentCore, ComponentNetwork, ComponentWorkload:
		// The core's controllers run the probe and the drain: their logs say more.
		p = in.providerOfType(provider.CoreProviderType)
	case ComponentObject, ComponentMachine:
		p = in.providerOfKind(m.ResponsibleKind)
	case ComponentProvider:
		p, _ = in.Management.Provider(m.Provider)
	}
	if p != nil {
		r.Provider, r.Type, r.Version, r.Namespace = p.ManifestLabel, p.Type, p.Version, p.Namespace
		if len(p.Deployments) > 0 {
			r.Deployment = p.Deployments[0].Name
		}
	}
	if c == ComponentObject && r.Provider == "" && m.ResponsibleKind != "" {
		r.Component = Component("provider of " + m.ResponsibleKind + " (not found in the inventory)")
	}
	return r
}

func (in *Input) providerOfType(t provider.Type) *ProviderStatus {
	if in.Management == nil {
		return nil
	}
	var found *ProviderStatus
	for i := range in.Management.Providers {
		if in.Management.Providers[i].Type == t {
			if found != nil {
				return nil // several: ambiguous
			}
			found = &in.Management.Providers[i]
		}
	}
	return found
}

// providerOfKind finds the provider of a "Kind.group": through the CRD's provider label, else the
// single installed provider of the type its API group implies.
func (in *Input) providerOfKind(kindGroup string) *ProviderStatus {
	if in.Management == nil || kindGroup == "" {
		return nil
	}
	if crd, ok := in.KindCRDs[kindGroup]; ok {
		if label, ok := in.Management.CRDProviders[crd]; ok {
			if p, ok := in.Management.Provider(label); ok {
				return p
			}
		}
	}
	gk := schema.ParseGroupKind(kindGroup)
	switch {
	case gk.Group == contract.Group:
		return in.providerOfType(provider.CoreProviderType)
	case strings.HasPrefix(gk.Group, "bootstrap."):
		return in.providerOfType(provider.BootstrapProviderType)
	case strings.HasPrefix(gk.Group, "controlplane."):
		return in.providerOfType(provider.ControlPlaneProviderType)
	case strings.HasPrefix(gk.Group, "infrastructure."):
		return in.providerOfType(provider.InfrastructureProviderType)
	}
	return nil
}

// cmdData is what the Next templates see.
type cmdData struct {
	Cluster, Namespace string // the workload cluster
	Kind, Name         string // the stuck object
	ObjectNamespace    string
	// Kubeconfig is the file GetKubeconfig writes (mode 0600).
	Kubeconfig    string
	GetKubeconfig string
	// The responsible provider (empty when unknown).
	Provider, ProviderNamespace, Deployment string
	Vars                                    map[string]string
}

func (in *Input) commands(r Rule, m Match, resp *Responsible) []string {
	d := cmdData{Kind: m.Kind, Name: m.Name, ObjectNamespace: m.Namespace, Vars: m.Vars}
	if in.Tree != nil && in.Tree.Root != nil {
		d.Cluster, d.Namespace = in.Tree.Root.Name, in.Tree.Root.Namespace
		d.Kubeconfig = d.Cluster + ".kubeconfig"
		d.GetKubeconfig = fmt.Sprintf("capctl get kubeconfig %s -n %s --write-to %s", d.Cluster, d.Namespace, d.Kubeconfig)
	}
	if resp != nil {
		d.Provider, d.ProviderNamespace, d.Deployment = resp.Provider, resp.Namespace, resp.Deployment
	}
	if d.Vars == nil {
		d.Vars = map[string]string{}
	}
	var out []string
	for _, src := range r.Next {
		t, err := template.New(r.ID).Option("missingkey=zero").Parse(src)
		if err != nil {
			// The table is fixed at build time and TestRulesTable parses every template.
			panic(fmt.Sprintf("rule %s: bad command template %q: %v", r.ID, src, err))
		}
		var b bytes.Buffer
		if err := t.Execute(&b, d); err != nil {
			panic(fmt.Sprintf("rule %s: command template %q: %v", r.ID, src, err))
		}
		if s := strings.TrimSpace(b.String()); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// --- helpers over the describe tree ---

// walk visits every node of the tree with its parent.
func walk(n *describe.Node, parent *describe.Node, fn func(n, parent *describe.Node)) {
	if n == nil {
		return
	}
	fn(n, parent)
	for _, c := range n.Children {
		walk(c, n, fn)
	}
}

// cond returns a condition of a node: its v1beta2 conditions first, then the v1beta1 ones.
func cond(n *describe.Node, t string) *describe.Condition {
	if n == nil {
		return nil
	}
	for i := range n.Conditions {
		if n.Conditions[i].Type == t {
			return &n.Conditions[i]
		}
	}
	for i := range n.V1Beta1Conditions {
		if n.V1Beta1Conditions[i].Type == t {
			return &n.V1Beta1Conditions[i]
		}
	}
	return nil
}

func isTrue(c *describe.Condition) bool  { return c != nil && c.Status == "True" }
func isFalse(c *describe.Condition) bool { return c != nil && c.Status == "False" }

// quote renders a condition as evidence, its message quoted as the controller wrote it.
func quote(n *describe.Node, c *describe.Condition) string {
	s := fmt.Sprintf("%s %s: %s=%s", n.Kind, n.Name, c.Type, c.Status)
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	if c.Message != "" {
		s += fmt.Sprintf(": %q", c.Message)
	}
	return s
}

// evidence quotes the conditions of n that are present and not in their normal state.
func evidence(n *describe.Node, types ...string) []string {
	var out []string
	for _, t := range types {
		c := cond(n, t)
		if c == nil {
			continue
		}
		normal := c.Status == "True"
		if t == "Deleting" || t == "Paused" {
			normal = c.Status == "False"
		}
		if !normal {
			out = append(out, quote(n, c))
		}
	}
	return out
}

func kindGroup(n *describe.Node) string {
	if n == nil {
		return ""
	}
	gv, err := schema.ParseGroupVersion(n.APIVersion)
	if err != nil || gv.Group == "" {
		return n.Kind
	}
	return n.Kind + "." + gv.Group
}

// childWithRole returns the child of n playing a role (MachineInfrastructure, BootstrapConfig, ...).
func childWithRole(n *describe.Node, role string) *describe.Node {
	if n == nil {
		return nil
	}
	for _, c := range n.Children {
		if c.Role == role {
			return c
		}
	}
	return nil
}

// since is the transition time of c when set, else fallback.
func since(c *describe.Condition, fallback time.Time) time.Time {
	if c != nil && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime
	}
	return fallback
}

func (in *Input) stuck(t time.Time) bool {
	return !t.IsZero() && in.Now.Sub(t) >= in.StuckAfter
}

func (in *Input) root() *describe.Node {
	if in.Tree == nil {
		return nil
	}
	return in.Tree.Root
}

// machineNode is a Machine of the tree with its facts and objects.
type machineNode struct {
	node, infra, boot *describe.Node
	facts             MachineFacts
}

func (in *Input) machines() []machineNode {
	var out []machineNode
	walk(in.root(), nil, func(n, _ *describe.Node) {
		if n.Category != describe.CategoryMachine || n.Missing {
			return
		}
		f, ok := in.Machines[n.Name]
		if !ok {
			f = MachineFacts{Name: n.Name}
		}
		out = append(out, machineNode{node: n, infra: childWithRole(n, "MachineInfrastructure"), boot: childWithRole(n, "BootstrapConfig"), facts: f})
	})
	return out
}

func ago(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String()
}
