package diagnose

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/provider"
)

// Rule ids (stable: monitoring keys on them).
const (
	RuleProviderController     = "provider-controller-unavailable"
	RuleProviderWebhook        = "provider-webhook-not-answering"
	RuleProviderContract       = "provider-contract-incompatible"
	RuleCertManager            = "cert-manager-not-ready"
	RuleClusterPaused          = "cluster-paused"
	RuleReferenceMissing       = "reference-missing"
	RuleWaitsForEndpoint       = "bootstrap-waits-for-control-plane-endpoint"
	RuleWaitsForControlPlane   = "bootstrap-waits-for-control-plane"
	RuleMachinePending         = "machine-pending-bootstrap"
	RuleMachineProvisioning    = "machine-provisioning-infrastructure"
	RuleNodeNotJoined          = "machine-node-not-joined"
	RuleRemoteConnection       = "remote-connection-probe-failed"
	RuleWorkloadUnreachable    = "workload-cluster-unreachable"
	RuleNodeNoCNI              = "node-not-ready-no-cni"
	RuleNodeNotReady           = "node-not-ready"
	RuleDrainBlockedByPDB      = "machine-drain-blocked-by-pdb"
	RuleMachineDeletingStuck   = "machine-deleting-stuck"
	RuleRemediationShortCircut = "mhc-remediation-short-circuited"
	RuleClusterNotAvailable    = "cluster-not-available"
)

// timeZero is "since unknown".
var timeZero time.Time

// Commands shared by several rules.
const (
	cmdLogs        = `{{if .Deployment}}kubectl logs -n {{.ProviderNamespace}} deploy/{{.Deployment}} | grep {{.Name}}{{end}}`
	cmdLogsCluster = `{{if .Deployment}}kubectl logs -n {{.ProviderNamespace}} deploy/{{.Deployment}} | grep {{.Cluster}}{{end}}`
	cmdDescribe    = `capctl describe cluster {{.Cluster}} -n {{.Namespace}} --show-conditions {{.Kind}}/{{.Name}}`
	cmdNodes       = `{{.GetKubeconfig}} && kubectl --kubeconfig {{.Kubeconfig}} get nodes,pods -n kube-system -o wide`
	cmdProviders   = `capctl get providers`
)

// Rules is the table every diagnosis runs, upstream first: the management cluster, then a
// cluster's objects from its infrastructure to its Machines, then its Nodes, then deletion,
// remediation and the fallback.
func Rules() []Rule {
	return slices.Concat(managementRules(), provisioningRules(), nodeRules(), lifecycleRules())
}

// managementRules are about the management cluster: provider controllers, webhooks, contracts
// and cert-manager.
func managementRules() []Rule {
	return []Rule{
		{
			ID: RuleProviderController, Severity: SeverityError, Stage: stageManagement, Component: ComponentProvider,
			Explanation: "The provider's controller is not running, so nothing it owns is reconciled: every object of its kinds stays as it is.",
			Match:       matchProviderController,
			Next: []string{
				`kubectl get pods -n {{.ProviderNamespace}} -l cluster.x-k8s.io/provider={{.Provider}} -o wide`,
				`{{if .Deployment}}kubectl describe deployment -n {{.ProviderNamespace}} {{.Deployment}}{{end}}`,
				`{{if .Deployment}}kubectl logs -n {{.ProviderNamespace}} deploy/{{.Deployment}} --previous{{end}}`,
			},
		},
		{
			ID: RuleProviderWebhook, Severity: SeverityError, Stage: stageManagement, Component: ComponentProvider,
			Explanation: "The provider's webhook does not answer, so the API server rejects creating or updating (and converting) its objects and the controllers that write them stall.",
			Match:       matchProviderWebhook,
			Next: []string{
				`kubectl get endpointslices -n {{.ProviderNamespace}} -l kubernetes.io/service-name={{.Vars.service}}`,
				`kubectl get pods -n {{.ProviderNamespace}} -l cluster.x-k8s.io/provider={{.Provider}} -o wide`,
				`kubectl get certificates -n {{.ProviderNamespace}}`,
			},
		},
		{
			ID: RuleProviderContract, Severity: SeverityError, Stage: stageManagement, Component: ComponentProvider,
			Explanation: "The provider implements a Cluster API contract the core does not accept, so the core cannot read its objects' status.",
			Match:       matchProviderContract,
			Next:        []string{`capctl upgrade plan`, cmdProviders},
		},
		{
			ID: RuleCertManager, Severity: SeverityError, Stage: stageManagement, Component: ComponentCertManager,
			Explanation: "cert-manager issues the providers' webhook certificates; while it is not ready, webhooks with expired or missing certificates do not answer.",
			Match:       matchCertManager,
			Next: []string{
				`kubectl get deployments,pods -n cert-manager`,
				`kubectl get certificates -A`,
			},
		},
	}
}

// provisioningRules follow a cluster's provisioning: pause, missing references, endpoint,
// control plane, bootstrap data, infrastructure.
func provisioningRules() []Rule {
	return []Rule{
		{
			ID: RuleClusterPaused, Severity: SeverityWarning, Stage: stagePaused, Component: ComponentUser,
			Explanation: "A paused Cluster is reconciled by no controller: nothing of it is created, scaled, upgraded, remediated or deleted until it is unpaused.",
			Match:       matchPaused,
			Next: []string{
				`{{if .Vars.movePaused}}capctl move --resume   # paused by an interrupted capctl move: finish it (same flags as the move){{end}}`,
				`{{if .Vars.specPaused}}kubectl patch cluster {{.Name}} -n {{.Namespace}} --type merge -p '{"spec":{"paused":false}}'{{end}}`,
				`{{if .Vars.annotation}}kubectl annotate cluster {{.Name}} -n {{.Namespace}} cluster.x-k8s.io/paused-{{end}}`,
			},
		},
		{
			ID: RuleReferenceMissing, Severity: SeverityError, Stage: stageMissing, Component: ComponentObject,
			Explanation: "An object the cluster refers to does not exist (or its kind is not served), so the object that refers to it cannot make progress.",
			Match:       matchMissing,
			Next:        []string{`kubectl get {{.Kind}} {{.Name}} -n {{.ObjectNamespace}}`, cmdProviders},
		},
		{
			ID: RuleWaitsForEndpoint, Severity: SeverityError, Stage: stageClusterInfra, Component: ComponentObject,
			Explanation: "The bootstrap provider waits for the cluster's control-plane endpoint, which the infrastructure provider sets once the cluster infrastructure (load balancer, network) is ready; until then no Machine gets bootstrap data.",
			Match:       matchWaitsForEndpoint,
			Next:        []string{cmdLogs, cmdDescribe},
		},
		{
			ID: RuleWaitsForControlPlane, Severity: SeverityWarning, Stage: stageControlPlane, Component: ComponentObject,
			Explanation: "Worker Machines get their bootstrap data (a join configuration) only once the control plane is initialized.",
			Match:       matchWaitsForControlPlane,
			Next:        []string{cmdLogs, cmdDescribe},
		},
		{
			ID: RuleMachinePending, Severity: SeverityError, Stage: stageBootstrap, Component: ComponentObject,
			Explanation: "A Machine stays Pending until its bootstrap provider writes the bootstrap data Secret; it has not.",
			Match:       matchPending,
			Next: []string{
				cmdLogs,
				`kubectl get {{.Vars.bootstrapKind}} {{.Vars.bootstrap}} -n {{.ObjectNamespace}} -o yaml`,
				cmdDescribe,
			},
		},
		{
			ID: RuleMachineProvisioning, Severity: SeverityError, Stage: stageInfrastructure, Component: ComponentObject,
			Explanation: "A Machine stays Provisioning until its infrastructure provider has created the machine and reported a providerID; the bootstrap data is there, the infrastructure is not.",
			Match:       matchProvisioning,
			Next: []string{
				cmdLogs,
				`kubectl get {{.Vars.infraKind}} {{.Vars.infra}} -n {{.ObjectNamespace}} -o yaml`,
				cmdDescribe,
			},
		},
	}
}

// nodeRules are about the workload cluster's Nodes and the way to them.
func nodeRules() []Rule {
	return []Rule{
		{
			ID: RuleNodeNotJoined, Severity: SeverityError, Stage: stageNodeJoin, Component: ComponentMachine,
			Explanation: "The machine runs but no Node joined the workload cluster for it: kubelet failed to join (cloud-init or kubeadm failed on the machine).",
			Match:       matchNotJoined,
			Next: []string{
				cmdNodes,
				`{{if .Vars.providerID}}# on the machine {{.Vars.providerID}}: sudo cat /var/log/cloud-init-output.log; sudo journalctl -u kubelet{{end}}`,
				cmdLogs,
			},
		},
		{
			ID: RuleRemoteConnection, Severity: SeverityError, Stage: stageConnection, Component: ComponentNetwork,
			Explanation: "The management cluster cannot reach the workload cluster's API server, so it sees no Nodes and cannot drain, remediate or finish provisioning.",
			Match:       matchRemoteConnection,
			Next: []string{
				`{{.GetKubeconfig}} && kubectl --kubeconfig {{.Kubeconfig}} get --raw /readyz`,
				`{{if .Vars.endpoint}}curl -k https://{{.Vars.endpoint}}/readyz   # from the management cluster's network{{end}}`,
				cmdLogsCluster,
			},
		},
		{
			ID: RuleWorkloadUnreachable, Severity: SeverityWarning, Stage: stageConnection, Component: ComponentNetwork,
			Explanation: "capctl could not read the workload cluster through its kubeconfig Secret, so the checks of Nodes, CNI and PodDisruptionBudgets were skipped.",
			Match:       matchWorkloadUnreachable,
			Next: []string{
				`{{.GetKubeconfig}} && kubectl --kubeconfig {{.Kubeconfig}} get --raw /readyz`,
			},
		},
		{
			ID: RuleNodeNoCNI, Severity: SeverityError, Stage: stageNode, Component: ComponentAddons,
			Explanation: "Nodes stay NotReady until a CNI plugin runs, and Cluster API installs none: a ClusterResourceSet or an add-on provider has to.",
			Match:       matchNoCNI,
			Next: []string{
				cmdNodes,
				`kubectl get clusterresourcesets,clusterresourcesetbindings -n {{.Namespace}}`,
				`capctl describe cluster {{.Cluster}} -n {{.Namespace}} --show-resourcesets`,
			},
		},
		{
			ID: RuleNodeNotReady, Severity: SeverityError, Stage: stageNode, Component: ComponentMachine,
			Explanation: "The Machine's Node is NotReady, so the Machine is not available; kubelet reports why in the Node's Ready condition.",
			Match:       matchNodeNotReady,
			Next: []string{
				`{{.GetKubeconfig}} && kubectl --kubeconfig {{.Kubeconfig}} describe node {{.Vars.node}}`,
			},
		},
	}
}

// lifecycleRules are about deletion and remediation, and the fallback when nothing more
// specific matched.
func lifecycleRules() []Rule {
	return []Rule{
		{
			ID: RuleDrainBlockedByPDB, Severity: SeverityError, Stage: stageDeleting, Component: ComponentWorkload,
			Explanation: "The Machine cannot be deleted until its Node is drained, and a PodDisruptionBudget that allows no disruption (its pods are already unhealthy or too few) blocks the eviction.",
			Match:       matchDrainPDB,
			Next: []string{
				`{{.GetKubeconfig}} && kubectl --kubeconfig {{.Kubeconfig}} get pdb -n {{.Vars.pdbNamespace}} {{.Vars.pdb}} -o yaml`,
				`kubectl --kubeconfig {{.Kubeconfig}} get pods -n {{.Vars.pdbNamespace}}{{if .Vars.selector}} -l {{.Vars.selector}}{{end}} -o wide`,
				`kubectl annotate machine {{.Name}} -n {{.ObjectNamespace}} machine.cluster.x-k8s.io/exclude-node-draining=""   # last resort: skips the drain`,
			},
		},
		{
			ID: RuleMachineDeletingStuck, Severity: SeverityError, Stage: stageDeleting, Component: ComponentObject,
			Explanation: "The Machine has been deleting for long: its Deleting condition says which step (drain, volume detach, hooks, infrastructure deletion) waits.",
			Match:       matchDeleting,
			Next:        []string{cmdLogs, cmdDescribe},
		},
		{
			ID: RuleRemediationShortCircut, Severity: SeverityWarning, Stage: stageRemediation, Component: ComponentCore,
			Explanation: "More Machines are unhealthy than the MachineHealthCheck's maxUnhealthy (unhealthyLessThanOrEqualTo) allows, so it remediates none of them.",
			Match:       matchRemediation,
			Next: []string{
				`kubectl get machinehealthcheck {{.Name}} -n {{.ObjectNamespace}} -o yaml`,
				`capctl describe cluster {{.Cluster}} -n {{.Namespace}} --show-conditions MachineHealthCheck,Machine+`,
			},
		},
		{
			ID: RuleClusterNotAvailable, Severity: SeverityError, Stage: stageFallback, Component: ComponentCore, Fallback: true,
			Explanation: "The Cluster is not available and no more specific rule matched: its first failing object is where to look.",
			Match:       matchNotAvailable,
			Next: []string{
				`capctl describe cluster {{.Cluster}} -n {{.Namespace}} --show-conditions all+`,
				cmdLogsCluster,
			},
		},
	}
}

// --- management rules ---

// relevantProviders are the providers that matter to the input: all of them without a tree
// (fleet or `get providers`), else the core and those whose kinds the tree holds.
func (in *Input) relevantProviders() []*ProviderStatus {
	if in.Management == nil {
		return nil
	}
	var out []*ProviderStatus
	if in.root() == nil {
		for i := range in.Management.Providers {
			out = append(out, &in.Management.Providers[i])
		}
		return out
	}
	want := map[string]bool{}
	if p := in.providerOfType(provider.CoreProviderType); p != nil {
		want[p.ManifestLabel] = true
	}
	walk(in.root(), nil, func(n, _ *describe.Node) {
		if p := in.providerOfKind(kindGroup(n)); p != nil {
			want[p.ManifestLabel] = true
		}
	})
	for i := range in.Management.Providers {
		if want[in.Management.Providers[i].ManifestLabel] {
			out = append(out, &in.Management.Providers[i])
		}
	}
	return out
}

func matchProviderController(in *Input) []Match {
	var out []Match
	for _, p := range in.relevantProviders() {
		if p.ControllerAvailable || in.Management.NotCheckedWhy(p, checkController) != "" {
			continue
		}
		m := Match{Kind: "Provider", Namespace: p.Namespace, Name: p.ManifestLabel, Provider: p.ManifestLabel}
		if len(p.Deployments) == 0 {
			m.Summary = fmt.Sprintf("provider %s has no controller Deployment in namespace %s", p.ManifestLabel, p.Namespace)
		} else {
			var names []string
			for _, d := range p.Deployments {
				if !d.Available {
					names = append(names, d.Name)
					m.Evidence = append(m.Evidence, d.Reason)
					if !d.Since.IsZero() && (m.Since.IsZero() || d.Since.Before(m.Since)) {
						m.Since = d.Since
					}
				}
			}
			m.Summary = fmt.Sprintf("the controller of %s is not available (Deployment %s)", p.ManifestLabel, strings.Join(names, ", "))
		}
		out = append(out, m)
	}
	return out
}

func matchProviderWebhook(in *Input) []Match {
	var out []Match
	for _, p := range in.relevantProviders() {
		if p.WebhookAnswers == nil || *p.WebhookAnswers || in.Management.NotCheckedWhy(p, checkWebhook) != "" {
			continue
		}
		m := Match{Kind: "Provider", Namespace: p.Namespace, Name: p.ManifestLabel, Provider: p.ManifestLabel, Vars: map[string]string{}}
		for _, c := range p.Webhooks {
			if !c.Ready {
				m.Evidence = append(m.Evidence, c.Reason)
				if c.What == "endpoints" && m.Vars["service"] == "" {
					_, name, _ := strings.Cut(strings.TrimPrefix(c.Object, "Service "), "/")
					m.Vars["service"] = name
				}
			}
		}
		m.Summary = fmt.Sprintf("the webhook of %s does not answer", p.ManifestLabel)
		out = append(out, m)
	}
	return out
}

func matchProviderContract(in *Input) []Match {
	var out []Match
	for _, p := range in.relevantProviders() {
		if p.Contract == "" || p.ContractCompatible || in.Management.NotCheckedWhy(p, checkContract) != "" {
			continue
		}
		out = append(out, Match{Kind: "Provider", Namespace: p.Namespace, Name: p.ManifestLabel, Provider: p.ManifestLabel,
			Summary:  fmt.Sprintf("%s %s implements contract %s; the core implements %s", p.ManifestLabel, p.Version, p.Contract, in.Management.CoreContract),
			Evidence: []string{fmt.Sprintf("CRDs of %s declare contract %s (labels cluster.x-k8s.io/<contract>): %s", p.ManifestLabel, p.Contract, strings.Join(p.CRDs, ", "))}})
	}
	return out
}

func matchCertManager(in *Input) []Match {
	if in.Management == nil || in.Management.CertManager == nil {
		return nil
	}
	cm := in.Management.CertManager
	if cm.Installed && cm.Ready || len(cm.NotChecked) > 0 {
		return nil
	}
	m := Match{Kind: "Namespace", Name: "cert-manager"}
	if !cm.Installed {
		m.Summary = "cert-manager is not installed"
		m.Evidence = []string{"CRD certificates.cert-manager.io not found"}
		return []Match{m}
	}
	m.Summary = "cert-manager is not ready"
	for _, c := range cm.Checks {
		if !c.Ready {
			m.Evidence = append(m.Evidence, c.Reason)
		}
	}
	return []Match{m}
}

// NotChecked is a rule that was not applied (to one object) because what it reads could not be.
type NotChecked struct {
	Rule   string `json:"rule"`
	Object string `json:"object"`
	// Reason is "cannot read <resource> (<verb> in <namespace>: <answer>)".
	Reason string `json:"reason"`
}

// notChecked lists the management rules that could not be applied to the input's providers and
// cert-manager, so a report never calls healthy what it could not read.
func notChecked(in *Input) []NotChecked {
	var out []NotChecked
	// The cluster's own kinds that could not be listed (Machines, MachineDeployments, ...): no
	// rule saw them, so none of the rules over them passed.
	if in.Tree != nil && in.Tree.Root != nil {
		for _, u := range in.Tree.Unread {
			out = append(out, NotChecked{Rule: "every rule over " + u.Resource, Object: objectName("Cluster", in.Tree.Root.Namespace, in.Tree.Root.Name), Reason: notCheckedReason(u)})
		}
	}
	m := in.Management
	if m == nil {
		return out
	}
	if why := m.NotChecked[checkInventory]; why != "" {
		for _, r := range []string{RuleProviderController, RuleProviderWebhook, RuleProviderContract} {
			out = append(out, NotChecked{Rule: r, Object: "every provider", Reason: why})
		}
	}
	checks := []struct{ check, rule string }{
		{checkController, RuleProviderController}, {checkWebhook, RuleProviderWebhook}, {checkContract, RuleProviderContract},
	}
	for _, p := range in.relevantProviders() {
		for _, c := range checks {
			if why := m.NotCheckedWhy(p, c.check); why != "" {
				out = append(out, NotChecked{Rule: c.rule, Object: "Provider " + p.Namespace + "/" + p.ManifestLabel, Reason: why})
			}
		}
	}
	if cm := m.CertManager; cm != nil {
		for _, why := range cm.NotChecked {
			out = append(out, NotChecked{Rule: RuleCertManager, Object: "cert-manager", Reason: why})
		}
	}
	return out
}

// --- cluster rules ---

func matchPaused(in *Input) []Match {
	r := in.root()
	if r == nil || !r.Paused {
		return nil
	}
	m := Match{Kind: "Cluster", Namespace: r.Namespace, Name: r.Name, Vars: map[string]string{}}
	c := cond(r, "Paused")
	if isTrue(c) {
		m.Since = since(c, timeZero)
	}
	var how []string
	if in.Cluster.SpecPaused {
		how = append(how, "spec.paused is true")
		m.Vars["specPaused"] = "true"
	}
	if in.Cluster.PausedByAnnotation {
		how = append(how, "annotation cluster.x-k8s.io/paused is set")
		m.Vars["annotation"] = "true"
	}
	if in.Cluster.MovePaused {
		how = append(how, "paused by capctl move (annotation capctl.cluster.x-k8s.io/move-paused)")
		m.Vars["movePaused"] = "true"
	}
	m.Summary = "Cluster " + r.Name + " is paused"
	if len(how) > 0 {
		m.Summary += ": " + strings.Join(how, ", ")
	}
	if c != nil && c.Status == "True" {
		m.Evidence = append(m.Evidence, quote(r, c))
	}
	return []Match{m}
}

func matchMissing(in *Input) []Match {
	var out []Match
	walk(in.root(), nil, func(n, parent *describe.Node) {
		if !n.Missing {
			return
		}
		m := Match{Kind: n.Kind, Namespace: n.Namespace, Name: n.Name, ResponsibleKind: kindGroup(n),
			Summary: fmt.Sprintf("%s %s/%s, referenced by %s %s, cannot be read", n.Kind, n.Namespace, n.Name, parent.Kind, parent.Name)}
		if n.Error != "" {
			m.Evidence = []string{n.Error}
		}
		out = append(out, m)
	})
	return out
}

// pendingMachines are the machines waiting for bootstrap data for longer than StuckAfter.
func (in *Input) pendingMachines() []machineNode {
	var out []machineNode
	for _, m := range in.machines() {
		f := m.facts
		if m.node.Deleting || !(f.Phase == "Pending" || (f.Phase == "" && !f.BootstrapOK)) {
			continue
		}
		if in.stuck(since(cond(m.node, "BootstrapConfigReady"), f.Created)) {
			out = append(out, m)
		}
	}
	return out
}

// endpointMissing tells whether the cluster still has no control-plane endpoint.
func (in *Input) endpointMissing() bool {
	r := in.root()
	return r != nil && in.Cluster.ControlPlaneEndpoint == "" && !isTrue(cond(r, "InfrastructureReady"))
}

func (in *Input) controlPlaneInitialized() bool {
	r := in.root()
	if r == nil {
		return false
	}
	c := cond(r, "ControlPlaneInitialized")
	return c == nil || c.Status == "True"
}

func matchWaitsForEndpoint(in *Input) []Match {
	r := in.root()
	pending := in.pendingMachines()
	if r == nil || len(pending) == 0 || !in.endpointMissing() {
		return nil
	}
	infra := childWithRole(r, "ClusterInfrastructure")
	m := Match{Kind: "Cluster", Namespace: r.Namespace, Name: r.Name, ResponsibleKind: kindGroup(infra)}
	if infra != nil && !infra.Missing {
		m.Kind, m.Namespace, m.Name = infra.Kind, infra.Namespace, infra.Name
	}
	c := cond(r, "InfrastructureReady")
	m.Since = since(c, pending[0].facts.Created)
	m.Summary = fmt.Sprintf("the cluster has no control-plane endpoint yet; %d Machine(s) wait for bootstrap data (%s)", len(pending), machineNames(pending))
	m.Evidence = append(m.Evidence, evidence(r, "InfrastructureReady")...)
	if infra != nil {
		m.Evidence = append(m.Evidence, evidence(infra, "Ready", "Provisioned")...)
	}
	return []Match{m}
}

func matchWaitsForControlPlane(in *Input) []Match {
	r := in.root()
	if r == nil || in.endpointMissing() || in.controlPlaneInitialized() {
		return nil
	}
	var workers []machineNode
	for _, m := range in.pendingMachines() {
		if !m.facts.ControlPlane {
			workers = append(workers, m)
		}
	}
	if len(workers) == 0 {
		return nil
	}
	cp := childWithRole(r, "ControlPlane")
	m := Match{Kind: "Cluster", Namespace: r.Namespace, Name: r.Name}
	if cp != nil {
		m.Kind, m.Namespace, m.Name, m.ResponsibleKind = cp.Kind, cp.Namespace, cp.Name, kindGroup(cp)
	}
	c := cond(r, "ControlPlaneInitialized")
	m.Since = since(c, workers[0].facts.Created)
	m.Summary = fmt.Sprintf("the control plane is not initialized; %d worker Machine(s) wait for it (%s)", len(workers), machineNames(workers))
	m.Evidence = evidence(r, "ControlPlaneInitialized")
	if cp != nil {
		m.Evidence = append(m.Evidence, evidence(cp, "Initialized", "Available")...)
	}
	return []Match{m}
}

func matchPending(in *Input) []Match {
	if in.endpointMissing() {
		return nil // bootstrap-waits-for-control-plane-endpoint covers them
	}
	cpInit := in.controlPlaneInitialized()
	var out []Match
	for _, mn := range in.pendingMachines() {
		if !cpInit && !mn.facts.ControlPlane {
			continue // bootstrap-waits-for-control-plane covers workers
		}
		n := mn.node
		m := Match{Kind: "Machine", Namespace: n.Namespace, Name: n.Name, Vars: map[string]string{},
			Since:   since(cond(n, "BootstrapConfigReady"), mn.facts.Created),
			Summary: fmt.Sprintf("Machine %s has been Pending for %s: no bootstrap data Secret yet", n.Name, ago(in.Now, since(cond(n, "BootstrapConfigReady"), mn.facts.Created)))}
		m.Evidence = evidence(n, "BootstrapConfigReady")
		if mn.boot != nil {
			m.ResponsibleKind = kindGroup(mn.boot)
			m.Vars["bootstrapKind"], m.Vars["bootstrap"] = strings.ToLower(mn.boot.Kind), mn.boot.Name
			m.Evidence = append(m.Evidence, evidence(mn.boot, "Ready", "DataSecretAvailable", "CertificatesAvailable")...)
		}
		out = append(out, m)
	}
	return out
}

func matchProvisioning(in *Input) []Match {
	var out []Match
	for _, mn := range in.machines() {
		f, n := mn.facts, mn.node
		if n.Deleting || !(f.Phase == "Provisioning" || (f.Phase == "" && f.BootstrapOK && !f.InfraOK)) {
			continue
		}
		s := since(cond(n, "InfrastructureReady"), f.Created)
		if !in.stuck(s) {
			continue
		}
		m := Match{Kind: "Machine", Namespace: n.Namespace, Name: n.Name, Since: s, Vars: map[string]string{},
			Summary: fmt.Sprintf("Machine %s has been Provisioning for %s: bootstrap data is there, the infrastructure is not provisioned (no providerID)", n.Name, ago(in.Now, s))}
		m.Evidence = evidence(n, "InfrastructureReady")
		if mn.infra != nil {
			m.ResponsibleKind = kindGroup(mn.infra)
			m.Vars["infraKind"], m.Vars["infra"] = strings.ToLower(mn.infra.Kind), mn.infra.Name
			m.Evidence = append(m.Evidence, evidence(mn.infra, "Ready", "Provisioned")...)
		}
		out = append(out, m)
	}
	return out
}

func matchNotJoined(in *Input) []Match {
	var out []Match
	for _, mn := range in.machines() {
		f, n := mn.facts, mn.node
		if n.Deleting || f.NodeName != "" || !(f.Phase == "Provisioned" || (f.Phase == "" && f.InfraOK)) {
			continue
		}
		s := since(cond(n, "NodeHealthy"), since(cond(n, "NodeReady"), since(cond(n, "InfrastructureReady"), f.Created)))
		if !in.stuck(s) {
			continue
		}
		m := Match{Kind: "Machine", Namespace: n.Namespace, Name: n.Name, Since: s, Vars: map[string]string{"providerID": f.ProviderID},
			Summary: fmt.Sprintf("Machine %s is provisioned (providerID %s) but no Node joined for %s (status.nodeRef is empty)", n.Name, orNone(f.ProviderID), ago(in.Now, s))}
		if mn.boot != nil {
			m.ResponsibleKind = kindGroup(mn.boot)
		}
		m.Evidence = evidence(n, "NodeHealthy", "NodeReady")
		if w := in.Workload; w != nil && w.Reachable {
			m.Evidence = append(m.Evidence, fmt.Sprintf("the workload cluster has %d Node(s), none with providerID %s", len(w.Nodes), orNone(f.ProviderID)))
		}
		out = append(out, m)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func matchRemoteConnection(in *Input) []Match {
	r := in.root()
	c := cond(r, "RemoteConnectionProbe")
	if r == nil || !isFalse(c) {
		return nil
	}
	m := Match{Kind: "Cluster", Namespace: r.Namespace, Name: r.Name, Since: since(c, timeZero),
		Summary:  fmt.Sprintf("the management cluster cannot reach the API server of %s (RemoteConnectionProbe=False)", r.Name),
		Evidence: []string{quote(r, c)}, Vars: map[string]string{"endpoint": in.Cluster.ControlPlaneEndpoint}}
	if w := in.Workload; w != nil && !w.Reachable && w.Error != "" {
		m.Evidence = append(m.Evidence, "capctl's own read failed too: "+w.Error)
	}
	return []Match{m}
}

func matchWorkloadUnreachable(in *Input) []Match {
	r, w := in.root(), in.Workload
	if r == nil || w == nil || w.Reachable || isFalse(cond(r, "RemoteConnectionProbe")) || !in.controlPlaneInitialized() || in.endpointMissing() {
		return nil
	}
	return []Match{{Kind: "Cluster", Namespace: r.Namespace, Name: r.Name,
		Summary: "the workload cluster could not be read", Evidence: []string{w.Error}}}
}

// nodeState is the Ready state of a Machine's Node: from the workload cluster when read, else the
// Machine's NodeReady condition (which mirrors it).
func (in *Input) nodeState(mn machineNode) (status, reason, message string, s describe.Condition, known bool) {
	if n, ok := in.Workload.NodeNamed(mn.facts.NodeName); ok && in.Workload.Reachable {
		return n.Ready, n.Reason, n.Message, describe.Condition{LastTransitionTime: n.ReadySince}, true
	}
	if c := cond(mn.node, "NodeReady"); c != nil {
		return c.Status, c.Reason, c.Message, *c, true
	}
	return "", "", "", describe.Condition{}, false
}

var cniMarkers = []string{"cni", "networkpluginnotready", "network plugin", "networkready=false"}

func mentionsCNI(msg string) bool {
	l := strings.ToLower(msg)
	for _, k := range cniMarkers {
		if strings.Contains(l, k) {
			return true
		}
	}
	return false
}

type notReadyNode struct {
	mn                      machineNode
	reason, message, status string
	since                   describe.Condition
}

func (in *Input) notReadyNodes() []notReadyNode {
	var out []notReadyNode
	for _, mn := range in.machines() {
		if mn.node.Deleting || mn.facts.NodeName == "" {
			continue
		}
		st, reason, msg, c, ok := in.nodeState(mn)
		if !ok || st == "True" {
			continue
		}
		if !in.stuck(since(&c, mn.facts.Created)) {
			continue
		}
		out = append(out, notReadyNode{mn: mn, reason: reason, message: msg, status: st, since: c})
	}
	return out
}

// cniMissing: the workload cluster was read and runs no CNI, or a Node says its network plugin
// is not ready.
func (in *Input) cniMissing(nodes []notReadyNode) bool {
	if w := in.Workload; w != nil && w.Reachable {
		return !w.CNIRunning()
	}
	for _, n := range nodes {
		if mentionsCNI(n.message) || mentionsCNI(n.reason) {
			return true
		}
	}
	return false
}

func matchNoCNI(in *Input) []Match {
	r := in.root()
	nodes := in.notReadyNodes()
	if r == nil || len(nodes) == 0 || !in.cniMissing(nodes) {
		return nil
	}
	m := Match{Kind: "Cluster", Namespace: r.Namespace, Name: r.Name}
	var names []string
	for _, n := range nodes {
		names = append(names, n.mn.facts.NodeName)
		s := since(&n.since, n.mn.facts.Created)
		if m.Since.IsZero() || s.Before(m.Since) {
			m.Since = s
		}
		ev := fmt.Sprintf("Node %s (Machine %s): Ready=%s", n.mn.facts.NodeName, n.mn.node.Name, n.status)
		if n.reason != "" {
			ev += " (" + n.reason + ")"
		}
		if n.message != "" {
			ev += fmt.Sprintf(": %q", n.message)
		}
		m.Evidence = append(m.Evidence, ev)
	}
	if w := in.Workload; w != nil && w.Reachable {
		m.Evidence = append(m.Evidence, "no CNI DaemonSet (calico, cilium, flannel, ...) has a ready pod in the workload cluster")
	}
	m.Summary = fmt.Sprintf("%d Node(s) NotReady and no CNI runs: %s", len(nodes), strings.Join(names, ", "))
	return []Match{m}
}

func matchNodeNotReady(in *Input) []Match {
	nodes := in.notReadyNodes()
	if len(nodes) == 0 || in.cniMissing(nodes) {
		return nil
	}
	var out []Match
	for _, n := range nodes {
		s := since(&n.since, n.mn.facts.Created)
		m := Match{Kind: "Machine", Namespace: n.mn.node.Namespace, Name: n.mn.node.Name, Since: s,
			Vars:    map[string]string{"node": n.mn.facts.NodeName},
			Summary: fmt.Sprintf("Node %s of Machine %s has been NotReady for %s", n.mn.facts.NodeName, n.mn.node.Name, ago(in.Now, s))}
		ev := fmt.Sprintf("Node %s: Ready=%s", n.mn.facts.NodeName, n.status)
		if n.reason != "" {
			ev += " (" + n.reason + ")"
		}
		if n.message != "" {
			ev += fmt.Sprintf(": %q", n.message)
		}
		m.Evidence = []string{ev}
		if mn := n.mn; mn.infra != nil {
			m.ResponsibleKind = kindGroup(mn.infra)
		}
		out = append(out, m)
	}
	return out
}

// deletingMachines are the machines deleting for longer than StuckAfter, with the time.
func (in *Input) deletingMachines() []machineNode {
	var out []machineNode
	for _, mn := range in.machines() {
		if !mn.node.Deleting {
			continue
		}
		if in.stuck(since(cond(mn.node, "Deleting"), mn.facts.Deleted)) {
			out = append(out, mn)
		}
	}
	return out
}

var pdbMarkers = []string{"disruption budget", "poddisruptionbudget", "violate the pod's disruption"}

func (in *Input) blockingPDB(mn machineNode) (*PDB, string) {
	if w := in.Workload; w != nil && w.Reachable && mn.facts.NodeName != "" {
		for i := range w.BlockingPDBs {
			for _, n := range w.BlockingPDBs[i].Nodes {
				if n == mn.facts.NodeName {
					return &w.BlockingPDBs[i], ""
				}
			}
		}
	}
	if c := cond(mn.node, "Deleting"); c != nil {
		l := strings.ToLower(c.Message)
		for _, k := range pdbMarkers {
			if strings.Contains(l, k) {
				return nil, c.Message
			}
		}
	}
	return nil, ""
}

func matchDrainPDB(in *Input) []Match {
	var out []Match
	for _, mn := range in.deletingMachines() {
		pdb, msg := in.blockingPDB(mn)
		if pdb == nil && msg == "" {
			continue
		}
		n := mn.node
		s := since(cond(n, "Deleting"), mn.facts.Deleted)
		m := Match{Kind: "Machine", Namespace: n.Namespace, Name: n.Name, Since: s, Vars: map[string]string{},
			Evidence: evidence(n, "Deleting")}
		if pdb != nil {
			m.Vars["pdb"], m.Vars["pdbNamespace"], m.Vars["selector"] = pdb.Name, pdb.Namespace, pdb.Selector
			m.Summary = fmt.Sprintf("Machine %s has been deleting for %s: the drain of Node %s is blocked by PodDisruptionBudget %s/%s", n.Name, ago(in.Now, s), mn.facts.NodeName, pdb.Namespace, pdb.Name)
			m.Evidence = append(m.Evidence, fmt.Sprintf("PodDisruptionBudget %s/%s: disruptionsAllowed=%d, currentHealthy=%d, desiredHealthy=%d, expectedPods=%d, pods on Nodes %s",
				pdb.Namespace, pdb.Name, pdb.DisruptionsAllowed, pdb.CurrentHealthy, pdb.DesiredHealthy, pdb.ExpectedPods, strings.Join(pdb.Nodes, ", ")))
		} else {
			m.Vars["pdb"], m.Vars["pdbNamespace"] = "", "<namespace>"
			m.Summary = fmt.Sprintf("Machine %s has been deleting for %s: the drain is blocked by a PodDisruptionBudget", n.Name, ago(in.Now, s))
		}
		out = append(out, m)
	}
	return out
}

func matchDeleting(in *Input) []Match {
	var out []Match
	for _, mn := range in.deletingMachines() {
		if pdb, msg := in.blockingPDB(mn); pdb != nil || msg != "" {
			continue
		}
		n := mn.node
		c := cond(n, "Deleting")
		s := since(c, mn.facts.Deleted)
		m := Match{Kind: "Machine", Namespace: n.Namespace, Name: n.Name, Since: s,
			Summary:  fmt.Sprintf("Machine %s has been deleting for %s", n.Name, ago(in.Now, s)),
			Evidence: evidence(n, "Deleting")}
		// Waiting for the infrastructure to go is the infrastructure provider's part; every other
		// step (drain, volumes, hooks) is the core's machine controller.
		m.ResponsibleKind = "Machine.cluster.x-k8s.io"
		if c != nil && strings.Contains(c.Reason, "Infrastructure") && mn.infra != nil {
			m.ResponsibleKind = kindGroup(mn.infra)
		}
		out = append(out, m)
	}
	return out
}

func matchRemediation(in *Input) []Match {
	var out []Match
	walk(in.root(), nil, func(n, _ *describe.Node) {
		if n.Category != describe.CategoryHealthCheck {
			return
		}
		c := cond(n, "RemediationAllowed")
		if !isFalse(c) {
			return
		}
		m := Match{Kind: "MachineHealthCheck", Namespace: n.Namespace, Name: n.Name, Since: since(c, timeZero),
			Evidence: []string{quote(n, c)}}
		m.Summary = fmt.Sprintf("MachineHealthCheck %s stopped remediating", n.Name)
		if hc := n.HealthCheck; hc != nil {
			ev := fmt.Sprintf("selects %d Machine(s)", hc.Selected)
			if hc.ExpectedMachines != nil && hc.CurrentHealthy != nil {
				ev = fmt.Sprintf("%d of %d expected Machines healthy", *hc.CurrentHealthy, *hc.ExpectedMachines)
			}
			if len(hc.Unhealthy) > 0 {
				sorted := append([]string(nil), hc.Unhealthy...)
				sort.Strings(sorted)
				ev += "; unhealthy: " + strings.Join(sorted, ", ")
			}
			m.Evidence = append(m.Evidence, ev)
			m.Summary = fmt.Sprintf("MachineHealthCheck %s stopped remediating: %d unhealthy Machine(s) exceed maxUnhealthy", n.Name, len(hc.Unhealthy))
		}
		out = append(out, m)
	})
	return out
}

func matchNotAvailable(in *Input) []Match {
	r := in.root()
	if r == nil {
		return nil
	}
	c := cond(r, "Available")
	if c == nil {
		c = cond(r, "Ready")
	}
	if c == nil || c.Status == "True" {
		return nil
	}
	m := Match{Kind: "Cluster", Namespace: r.Namespace, Name: r.Name, Since: since(c, timeZero),
		Summary: fmt.Sprintf("Cluster %s is not available", r.Name), Evidence: []string{quote(r, c)}}
	if r.FirstFailing != "" {
		m.Evidence = append(m.Evidence, "first failing: "+r.FirstFailing)
	}
	return []Match{m}
}

func machineNames(ms []machineNode) string {
	names := make([]string, 0, len(ms))
	for _, m := range ms {
		names = append(names, m.node.Name)
	}
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}

// NeedsWorkload tells whether reading the workload cluster could change the findings beyond
// what the management side already shows, so that `diagnose clusters` reads only those:
//   - a provisioned Machine whose Node has not joined (the finding counts the workload's Nodes);
//   - a Machine whose Node the Machine does not report Ready (the Node's own Ready condition, and
//     whether a CNI runs, decide between node-not-ready-no-cni and node-not-ready);
//   - a Machine stuck deleting (a PodDisruptionBudget of the workload may block its drain).
//
// A Cluster whose RemoteConnectionProbe is False is not read: the core already failed to reach
// its API server, and a read that times out would add one line of evidence. Machines that report
// their Node Ready are trusted (the core mirrors the Node's Ready condition into NodeReady), and a
// cluster that is not read is not checked for a missing or unusable kubeconfig Secret
// (workload-cluster-unreachable): `diagnose cluster` does both.
func (in *Input) NeedsWorkload() bool {
	if in.root() == nil || isFalse(cond(in.root(), "RemoteConnectionProbe")) {
		return false
	}
	if len(matchNotJoined(in)) > 0 || len(in.deletingMachines()) > 0 {
		return true
	}
	for _, mn := range in.machines() {
		if !mn.node.Deleting && mn.facts.NodeName != "" && !isTrue(cond(mn.node, "NodeReady")) {
			return true
		}
	}
	return false
}
