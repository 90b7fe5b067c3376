package authz

import (
	"fmt"
	"sort"
	"strings"

	"github.com/capctl/capctl/pkg/contract"
)

// Side is the cluster a rule applies to.
type Side string

// The clusters a command talks to.
const (
	Management Side = "management cluster"
	Source     Side = "source cluster"
	Target     Side = "target cluster"
)

// Scope says where a rule's verbs are needed.
type Scope string

// Scopes of a rule.
const (
	ClusterWide Scope = "cluster-wide"
	// InNamespace: in the namespace the command works on (moved, or a provider's).
	InNamespace Scope = "namespace"
)

// Every* are placeholders a command expands at run time from what it found.
const (
	// EveryMovedKind: every kind of the move graph (Cluster API kinds and those labelled for move).
	EveryMovedKind = "<every moved kind>"
	// EveryListableKind: every kind the server serves with list and delete (delete searches them
	// all for the providers' components).
	EveryListableKind = "<every listable kind>"
	// EveryComponentKind: every kind of the providers' components (Deployments, RBAC, CRDs, ...).
	EveryComponentKind = "<every component kind>"
	// EveryRolledKind: the kinds of the objects a rollout names (machinedeployment/x,
	// kubeadmcontrolplane/y).
	EveryRolledKind = "<every rolled-out kind>"
	// EveryTopologyKind: the kinds a ClusterClass's clusters are built of (infrastructure
	// clusters, control planes, templates).
	EveryTopologyKind = "<every topology-managed kind>"
	// EveryPlannedTemplateKind: the kinds of the changed templates a topology plan carries.
	EveryPlannedTemplateKind = "<every changed template kind>"
	// EveryControlPlaneKind: the control plane kinds of the clusters a rollout follows.
	EveryControlPlaneKind = "<every control plane kind>"
)

// Rule is verbs on resources of one group, on one side, in one scope.
type Rule struct {
	Side      Side
	Group     string
	Resources []string
	Verbs     []string
	Scope     Scope
	Why       string
}

// Command is one capctl command's permissions.
type Command struct {
	Name  string
	Rules []Rule
}

// Commands is the one table of what each command needs. The preflights check it and
// docs/guides/permissions.md is generated from it (TestPermissionsDocIsUpToDate).
var Commands = []Command{
	{Name: "init", Rules: []Rule{
		{Management, "coordination.k8s.io", []string{"leases"}, []string{"get", "create", "update", "delete"}, ClusterWide, "the init lock (kube-system)"},
		{Management, "clusterctl.cluster.x-k8s.io", []string{"providers"}, []string{"get", "list", "create", "update", "patch"}, ClusterWide, "the inventory"},
		{Management, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, []string{"get", "list", "create", "update", "patch"}, ClusterWide, "the inventory CRD and the providers' CRDs"},
		{Management, "*", []string{EveryComponentKind}, []string{"get", "list", "create", "patch"}, ClusterWide, "server-side apply of cert-manager's and the providers' components"},
		{Management, "cert-manager.io", []string{"issuers", "certificates"}, []string{"get", "create", "delete"}, ClusterWide, "cert-manager's readiness probe"},
		{Management, "", []string{"namespaces"}, []string{"get", "list", "create", "delete"}, ClusterWide, "provider namespaces and the probe's namespace"},
	}},
	{Name: "upgrade apply", Rules: []Rule{
		{Management, "clusterctl.cluster.x-k8s.io", []string{"providers"}, []string{"get", "list", "update", "patch"}, ClusterWide, "the inventory"},
		{Management, "*", []string{EveryComponentKind}, []string{"get", "list", "create", "patch", "delete"}, ClusterWide, "old components deleted, new ones applied"},
		{Management, "apps", []string{"deployments"}, []string{"get", "list", "patch", "update"}, ClusterWide, "old controllers scaled to 0 first"},
	}},
	{Name: "delete", Rules: []Rule{
		{Management, "clusterctl.cluster.x-k8s.io", []string{"providers"}, []string{"get", "list", "delete"}, ClusterWide, "the inventory entries"},
		{Management, "*", []string{EveryListableKind}, []string{"list"}, ClusterWide, "the search for every component: an incomplete one is refused"},
		{Management, "*", []string{EveryComponentKind}, []string{"delete"}, ClusterWide, "the components found"},
	}},
	{Name: "move", Rules: []Rule{
		{Source, "coordination.k8s.io", []string{"leases"}, []string{"get", "create", "update", "delete"}, InNamespace, "the namespace lock"},
		{Source, "", []string{"configmaps", "secrets"}, []string{"get", "list", "create", "update", "delete", "deletecollection"}, InNamespace, "the journal and its copy of the objects"},
		{Source, "", []string{"configmaps"}, []string{"list"}, ClusterWide, "the journals of unfinished moves in every namespace (an -A move keeps one for all)"},
		{Source, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, []string{"list"}, ClusterWide, "the moved kinds"},
		{Source, "clusterctl.cluster.x-k8s.io", []string{"providers"}, []string{"list"}, ClusterWide, "the providers to compare"},
		{Source, "*", []string{EveryMovedKind}, []string{"get", "list", "patch", "update", "delete"}, InNamespace, "read, pause, strip finalizers, delete"},
		{Target, "", []string{"namespaces"}, []string{"list", "create"}, ClusterWide, "the moved namespaces"},
		{Target, "clusterctl.cluster.x-k8s.io", []string{"providers"}, []string{"list"}, ClusterWide, "the providers to compare"},
		{Target, "*", []string{EveryMovedKind}, []string{"get", "list", "create", "patch", "update"}, InNamespace, "create paused, verify, unpause"},
	}},
	{Name: "rollout", Rules: []Rule{
		{Management, "*", []string{EveryRolledKind}, []string{"get", "patch"}, InNamespace, "restart, pause, resume, undo of the objects named (MachineDeployments, control planes; for a restart of those a Cluster's topology manages, the Cluster instead)"},
		{Management, contract.Group, []string{"machinesets"}, []string{"get", "list"}, InNamespace, "undo finds the previous revision"},
		{Management, contract.Group, []string{"machines"}, []string{"list"}, InNamespace, "restart lists the Machines it replaces"},
		{Management, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, []string{"get"}, ClusterWide, "the control plane kind's contract"},
	}},
	{Name: "topology apply", Rules: []Rule{
		{Management, contract.Group, []string{"clusters"}, []string{"get", "list", "patch"}, ClusterWide, "the planned Clusters compared with the plan, moved (spec.topology.classRef) and followed"},
		{Management, contract.Group, []string{"clusterclasses"}, []string{"get", "list", "create", "delete"}, ClusterWide, "the new class created (deleted again when the run is refused before its first move; --prune-old-class deletes the old one)"},
		{Management, "*", []string{EveryPlannedTemplateKind}, []string{"get", "create", "delete"}, ClusterWide, "the changed templates created under new names (deleted again when the run is refused before its first move)"},
		{Management, "*", []string{EveryControlPlaneKind}, []string{"get"}, ClusterWide, "each cluster's control plane, followed until done"},
		{Management, contract.Group, []string{"machinedeployments", "machinepools", "machines"}, []string{"list"}, ClusterWide, "each cluster's workers and Machines, followed until done"},
		{Management, "", []string{"configmaps"}, []string{"get", "create", "update"}, ClusterWide, "the rollout's audit record (a ConfigMap in capctl-system; capctl upgrade history)"},
		{Management, "", []string{"namespaces"}, []string{"get", "create"}, ClusterWide, "capctl-system, when it does not exist yet"},
	}},
	{Name: "topology plan", Rules: []Rule{
		{Management, contract.Group, []string{"clusters", "clusterclasses"}, []string{"get", "list"}, ClusterWide, "the clusters a change reaches and their classes"},
		{Management, contract.Group, []string{"machinedeployments", "machinepools", "machinehealthchecks", "machines"}, []string{"get", "list"}, ClusterWide, "each cluster's current topology"},
		{Management, "*", []string{EveryTopologyKind}, []string{"get"}, ClusterWide, "the classes' templates and each cluster's objects"},
		{Management, "*", []string{EveryTopologyKind}, []string{"patch"}, ClusterWide, "server-side-apply dry runs (dryRun=All: nothing is written), as the topology controller computes its changes"},
		{Management, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, []string{"get", "list"}, ClusterWide, "the contract version of each referenced kind"},
	}},
}

// Lookup finds a command's permissions.
func Lookup(name string) (Command, error) {
	var names []string
	for _, c := range Commands {
		if c.Name == name {
			return c, nil
		}
		names = append(names, c.Name)
	}
	return Command{}, fmt.Errorf("no permission table for %q: choose one of %s", name, strings.Join(names, ", "))
}

// Expansion fills a command's placeholders and scopes.
type Expansion struct {
	// Namespace replaces InNamespace ("" for all namespaces).
	Namespace string
	// Kinds lists, per placeholder, the resources it stands for ("plural.group").
	Kinds map[string][]string
}

// Permissions expands the rules of one side into the permissions to check. A placeholder that x
// does not expand is checked as every resource of every group ("*"); one expanded to no kinds
// (nothing of that sort will be touched) needs nothing.
func (c Command) Permissions(side Side, x Expansion) []Permission {
	var out []Permission
	for _, r := range c.Rules {
		if r.Side != side {
			continue
		}
		ns := ""
		if r.Scope == InNamespace {
			ns = x.Namespace
		}
		for _, res := range r.Resources {
			targets := [][2]string{{r.Group, res}}
			if strings.HasPrefix(res, "<") {
				targets = nil
				kinds, known := x.Kinds[res]
				for _, gr := range kinds {
					g, rr := SplitResource(gr)
					targets = append(targets, [2]string{g, rr})
				}
				if !known {
					targets = [][2]string{{"*", "*"}}
				}
			}
			for _, t := range targets {
				for _, v := range r.Verbs {
					out = append(out, Permission{Group: t[0], Resource: t[1], Verb: v, Namespace: ns})
				}
			}
		}
	}
	return dedupe(out)
}

// Sides are the clusters a command talks to, in order.
func (c Command) Sides() []Side {
	seen := map[Side]bool{}
	var out []Side
	for _, r := range c.Rules {
		if !seen[r.Side] {
			seen[r.Side] = true
			out = append(out, r.Side)
		}
	}
	return out
}

// readCommandsDoc is what read commands do with less permission (pkg/diagnose: the partial view;
// the exit code is multicluster.ExitIncomplete, which a test keeps in step with this text).
const readCommandsDoc = `
## Read commands with less permission

Read commands show a partial view instead of stopping: they show everything they could read and
name each kind they could not, with the namespace, the verb and the server's answer
(` + "`Partial view: N kind(s) could not be read`" + `; in ` + "`-o json|yaml`" + ` a field
` + "`unread: [{resource, namespace, verb, forbidden, reason}]`" + `). A check that needed a kind it
could not read is never reported as passed: it says ` + "`not checked: cannot read <kind> (...)`" + `.
The view being partial outranks what it shows: such a run ends with exit code 3, the code of a
view over several management clusters where one could not be read (in both cases the view is
incomplete).

| command | without | shows | not checked |
|---|---|---|---|
| ` + "`get providers`" + ` | list Deployments (cluster-wide) | Deployments listed per provider namespace instead; only the namespaces it may not read are missing | CONTROLLER of the providers in those namespaces |
| ` + "`get providers`" + ` | list ValidatingWebhookConfigurations / MutatingWebhookConfigurations | every other column | WEBHOOK of every provider |
| ` + "`get providers`" + ` | list CustomResourceDefinitions | every other column | CONTRACT of every provider |
| ` + "`get providers`" + ` | list or get cert-manager's CRD, Deployments, webhook configurations, Certificates | the providers | cert-manager's state |
| ` + "`get providers`" + ` | list the inventory (providers.clusterctl.cluster.x-k8s.io) | cert-manager only | every provider check |
| ` + "`describe cluster`" + ` | list Machines, MachineDeployments, MachineSets, MachinePools or MachineHealthChecks (in the cluster's namespace) | the tree without that kind, the kind named under it | — |
| ` + "`diagnose cluster`, `diagnose clusters`" + ` | list one of the cluster's own kinds (Machines, MachineDeployments, ...) | every rule on what could be read | every rule over that kind (` + "`every rule over machines.cluster.x-k8s.io`" + `); the cluster is then not healthy |
| ` + "`diagnose cluster`, `diagnose clusters`" + ` | any of the above | every rule on the cluster's own objects, the management rules on what could be read | the rules that needed the kind (` + "`provider-controller-unavailable`, `provider-webhook-not-answering`, `provider-contract-incompatible`, `cert-manager-not-ready`" + `); the cluster is then not healthy: "not fully checked" |
| ` + "`diagnose v1beta1`" + ` | list ClusterClasses | the storage and provider checks | ` + "`patch-selector`, `patch-path`" + ` (exit 3, the kind named) |
| ` + "`diagnose v1beta1`" + ` | list CustomResourceDefinitions | the ClusterClass checks | ` + "`storage`, `provider`" + ` |
| ` + "`diagnose v1beta1`" + ` | list the objects of a CRD that stores v1beta1 | the finding, "not counted" | the object count |
| ` + "`diagnose v1beta1`" + ` | list the inventory | every other check | ` + "`provider`" + ` |
| ` + "`diagnose bundle`" + ` | list a kind (a Cluster API kind, Secrets, Deployments, pods, events, the inventory) | every other file | that kind, named in manifest.json (exit 3) |
| ` + "`diagnose bundle`" + ` | get pods/log | every other file | that container's log, named in manifest.json as left out |

| ` + "`topology plan`" + ` | get a template, a cluster's object, or patch (dry run) one of them | every other cluster's plan | that cluster: ` + "`partial: not computed: ... forbidden`" + ` |
| ` + "`topology plan`" + ` | list Clusters or ClusterClasses | — (the plan fails, naming the kind: which clusters a change reaches cannot be known) | — |

A bad credential or an unreachable API server is not a partial view: the command fails (exit 1).
`

// Markdown renders the table as docs/guides/permissions.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Permissions of each command\n\n")
	b.WriteString("Generated from `pkg/authz` (`go test ./pkg/authz -run TestPermissionsDocIsUpToDate -update`); do not edit.\n\n")
	b.WriteString("`capctl auth can-i COMMAND` checks these on your clusters without changing anything " +
		"(SelfSubjectAccessReview) and prints a ready Role/ClusterRole for what is missing. `namespace` " +
		"means the namespace the command works on; `<...>` stands for kinds found at run time. For `delete` " +
		"and `move`, can-i fills them from the same read-only plan the command makes (and names every kind " +
		"that plan could not list), so a yes is a command that passes its own checks; for the others it " +
		"says which are left to the run.\n\n")
	b.WriteString("Destructive commands refuse an incomplete view: `delete` names every kind it could not list, " +
		"with the verb, before the first delete. `init`, `upgrade apply` (providers), `move`, `delete`, `rollout` and `topology apply` check these permissions (SelfSubjectAccessReview, the `<...>` kinds expanded to the objects they will touch) before their first write, in a dry run too, and refuse with every missing permission at once and a ready Role/ClusterRole; nothing is changed. `upgrade apply --kubernetes-version` (the fleet) is not in this table: it sends each cluster's first patch as a server-side dry run before the first real one, which the API server authorizes as the patch itself.\n")
	b.WriteString(readCommandsDoc)
	cmds := append([]Command(nil), Commands...)
	sort.SliceStable(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	for _, c := range cmds {
		fmt.Fprintf(&b, "\n## capctl %s\n\n| cluster | API group | resources | verbs | where | why |\n|---|---|---|---|---|---|\n", c.Name)
		for _, r := range c.Rules {
			g := r.Group
			if g == "" {
				g = "core"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.Side, g, strings.Join(r.Resources, ", "), strings.Join(r.Verbs, ", "), r.Scope, r.Why)
		}
	}
	b.WriteString("\nEvery least-privilege and lock case, with its test and the refusal it prints: [safety cases](safety-cases.md).\n")
	return b.String()
}
