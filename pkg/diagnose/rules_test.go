package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/provider"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func c(t, status, reason, msg string, ago time.Duration) describe.Condition {
	return describe.Condition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: now.Add(-ago)}
}

const (
	coreAV  = "cluster.x-k8s.io/v1beta2"
	bootAV  = "bootstrap.cluster.x-k8s.io/v1beta2"
	infraAV = "infrastructure.cluster.x-k8s.io/v1beta2"
	cpAV    = "controlplane.cluster.x-k8s.io/v1beta2"
)

// fixture is a cluster "c1" in namespace "ns" with a DockerCluster, a KubeadmControlPlane and
// the four usual providers installed and healthy; tests change what their rule looks at.
type fixture struct {
	in       *Input
	root, cp *describe.Node
	infra    *describe.Node
}

func newFixture() *fixture {
	root := &describe.Node{Kind: "Cluster", APIVersion: coreAV, Namespace: "ns", Name: "c1", Category: describe.CategoryCluster,
		Conditions: []describe.Condition{c("Available", "True", "Available", "", time.Hour), c("InfrastructureReady", "True", "Ready", "", time.Hour),
			c("ControlPlaneInitialized", "True", "Initialized", "", time.Hour), c("RemoteConnectionProbe", "True", "ProbeSucceeded", "", time.Hour)}}
	infra := &describe.Node{Kind: "DockerCluster", APIVersion: infraAV, Namespace: "ns", Name: "c1", Category: describe.CategoryObject, Role: "ClusterInfrastructure",
		Conditions: []describe.Condition{c("Ready", "True", "Ready", "", time.Hour)}}
	cp := &describe.Node{Kind: "KubeadmControlPlane", APIVersion: cpAV, Namespace: "ns", Name: "c1-cp", Category: describe.CategoryControlPlane, Role: "ControlPlane",
		Conditions: []describe.Condition{c("Available", "True", "Available", "", time.Hour)}}
	root.Children = []*describe.Node{infra, cp}
	mgmt := &Management{CoreContract: "v1beta2", CRDProviders: map[string]string{
		"kubeadmconfigs.bootstrap.cluster.x-k8s.io":          "bootstrap-kubeadm",
		"dockermachines.infrastructure.cluster.x-k8s.io":     "infrastructure-docker",
		"dockerclusters.infrastructure.cluster.x-k8s.io":     "infrastructure-docker",
		"kubeadmcontrolplanes.controlplane.cluster.x-k8s.io": "control-plane-kubeadm",
		"machines.cluster.x-k8s.io":                          "cluster-api",
		"clusters.cluster.x-k8s.io":                          "cluster-api",
	}}
	for _, p := range []struct {
		name, ns, dep string
		t             provider.Type
	}{
		{"cluster-api", "capi-system", "capi-controller-manager", provider.CoreProviderType},
		{"kubeadm", "capi-kubeadm-bootstrap-system", "capi-kubeadm-bootstrap-controller-manager", provider.BootstrapProviderType},
		{"kubeadm", "capi-kubeadm-control-plane-system", "capi-kubeadm-control-plane-controller-manager", provider.ControlPlaneProviderType},
		{"docker", "capd-system", "capd-controller-manager", provider.InfrastructureProviderType},
	} {
		yes := true
		mgmt.Providers = append(mgmt.Providers, ProviderStatus{Name: p.name, Type: p.t, Version: "v1.14.0", Namespace: p.ns,
			ManifestLabel: provider.ManifestLabel(p.name, p.t), Contract: "v1beta2", ContractCompatible: true,
			Deployments: []DeploymentStatus{{Name: p.dep, Available: true}}, ControllerAvailable: true, WebhookAnswers: &yes})
	}
	mgmt.CertManager = &CertManagerStatus{Installed: true, Ready: true}
	in := &Input{Now: now, Tree: &describe.Tree{Root: root, ServedVersion: "v1beta2"}, Machines: map[string]MachineFacts{},
		Cluster: ClusterFacts{ControlPlaneEndpoint: "10.0.0.1:6443"}, Management: mgmt,
		KindCRDs: map[string]string{
			"KubeadmConfig.bootstrap.cluster.x-k8s.io":          "kubeadmconfigs.bootstrap.cluster.x-k8s.io",
			"DockerMachine.infrastructure.cluster.x-k8s.io":     "dockermachines.infrastructure.cluster.x-k8s.io",
			"DockerCluster.infrastructure.cluster.x-k8s.io":     "dockerclusters.infrastructure.cluster.x-k8s.io",
			"KubeadmControlPlane.controlplane.cluster.x-k8s.io": "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io",
			"Machine.cluster.x-k8s.io":                          "machines.cluster.x-k8s.io",
			"Cluster.cluster.x-k8s.io":                          "clusters.cluster.x-k8s.io",
		},
		Workload: &Workload{Reachable: true, CNI: []DaemonSet{{Namespace: "kube-system", Name: "calico-node", Desired: 1, Ready: 1}}}}
	return &fixture{in: in, root: root, cp: cp, infra: infra}
}

// machine adds a machine with its DockerMachine and KubeadmConfig under the control plane (cp)
// or the cluster's workers.
func (f *fixture) machine(name string, cp bool, facts MachineFacts, conds ...describe.Condition) *describe.Node {
	m := &describe.Node{Kind: "Machine", APIVersion: coreAV, Namespace: "ns", Name: name, Category: describe.CategoryMachine, Conditions: conds}
	m.Children = []*describe.Node{
		{Kind: "DockerMachine", APIVersion: infraAV, Namespace: "ns", Name: name, Category: describe.CategoryObject, Role: "MachineInfrastructure"},
		{Kind: "KubeadmConfig", APIVersion: bootAV, Namespace: "ns", Name: name, Category: describe.CategoryObject, Role: "BootstrapConfig"},
	}
	facts.Name, facts.ControlPlane = name, cp
	if facts.Created.IsZero() {
		facts.Created = now.Add(-2 * time.Hour)
	}
	f.in.Machines[name] = facts
	if cp {
		f.cp.Children = append(f.cp.Children, m)
	} else {
		f.root.Children = append(f.root.Children, m)
	}
	return m
}

func healthyFacts(node string) MachineFacts {
	return MachineFacts{Phase: "Running", NodeName: node, ProviderID: "docker:////" + node, DataSecret: node, BootstrapOK: true, InfraOK: true}
}

func findingOf(t *testing.T, r *Report, rule string) *Finding {
	t.Helper()
	for i := range r.Findings {
		if r.Findings[i].Rule == rule {
			return &r.Findings[i]
		}
	}
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Rule+" "+f.Object)
	}
	t.Fatalf("no %s finding; got %v", rule, got)
	return nil
}

func TestHealthyClusterHasNoFinding(t *testing.T) {
	f := newFixture()
	f.machine("c1-cp-a", true, healthyFacts("c1-cp-a"), c("Ready", "True", "Ready", "", time.Hour), c("NodeReady", "True", "NodeReady", "", time.Hour))
	f.in.Workload.Nodes = []Node{{Name: "c1-cp-a", Ready: "True"}}
	r := Run(f.in)
	if !r.Healthy || len(r.Findings) != 0 {
		t.Fatalf("healthy cluster: %+v", r.Findings)
	}
}

// ruleCase is one rule's stuck state, built on the fixture, and what its finding must say.
type ruleCase struct {
	rule string
	// setup puts the fixture into the stuck state.
	setup func(f *fixture)
	// object, provider (manifest label, "" for none) and a command the finding must carry.
	object, provider, next string
	// evidence must appear in one evidence line (quoted condition messages).
	evidence string
	root     bool
}

func ruleCases() []ruleCase {
	return []ruleCase{
		{
			rule: RuleProviderController, object: "Provider capd-system/infrastructure-docker", provider: "infrastructure-docker", root: true,
			next: "kubectl get pods -n capd-system -l cluster.x-k8s.io/provider=infrastructure-docker -o wide", evidence: "0 of 1 replicas",
			setup: func(f *fixture) {
				p, _ := f.in.Management.Provider("infrastructure-docker")
				p.ControllerAvailable = false
				p.Deployments[0].Available, p.Deployments[0].Reason = false, "Deployment capd-system/capd-controller-manager not available (0 of 1 replicas available)"
			},
		},
		{
			rule: RuleProviderWebhook, object: "Provider capi-kubeadm-bootstrap-system/bootstrap-kubeadm", provider: "bootstrap-kubeadm", root: true,
			next: "kubectl get endpointslices -n capi-kubeadm-bootstrap-system -l kubernetes.io/service-name=capi-kubeadm-bootstrap-webhook-service", evidence: "has no ready endpoints",
			setup: func(f *fixture) {
				f.machine("c1-cp-a", true, healthyFacts("c1-cp-a"), c("Ready", "True", "Ready", "", time.Hour))
				f.in.Workload.Nodes = []Node{{Name: "c1-cp-a", Ready: "True"}}
				p, _ := f.in.Management.Provider("bootstrap-kubeadm")
				no := false
				p.WebhookAnswers = &no
				p.Webhooks = []Check{{Object: "Service capi-kubeadm-bootstrap-system/capi-kubeadm-bootstrap-webhook-service", What: "endpoints",
					Reason: "webhook Service capi-kubeadm-bootstrap-system/capi-kubeadm-bootstrap-webhook-service has no ready endpoints"}}
			},
		},
		{
			rule: RuleProviderContract, object: "Provider capd-system/infrastructure-docker", provider: "infrastructure-docker", root: true,
			next: "capctl upgrade plan", evidence: "declare contract v1alpha4",
			setup: func(f *fixture) {
				p, _ := f.in.Management.Provider("infrastructure-docker")
				p.Contract, p.ContractCompatible, p.CRDs = "v1alpha4", false, []string{"dockerclusters.infrastructure.cluster.x-k8s.io"}
			},
		},
		{
			rule: RuleCertManager, object: "Namespace cert-manager", root: true, next: "kubectl get deployments,pods -n cert-manager", evidence: "cert-manager-webhook",
			setup: func(f *fixture) {
				f.in.Management.CertManager = &CertManagerStatus{Installed: true, Ready: false, Checks: []Check{{Object: "Service cert-manager/cert-manager-webhook", What: "endpoints", Reason: "webhook Service cert-manager/cert-manager-webhook has no ready endpoints"}}}
			},
		},
		{
			rule: RuleClusterPaused, object: "Cluster ns/c1", root: true, provider: "",
			next: `kubectl patch cluster c1 -n ns --type merge -p '{"spec":{"paused":false}}'`, evidence: "Paused=True",
			setup: func(f *fixture) {
				f.root.Paused = true
				f.in.Cluster.SpecPaused = true
				f.root.Conditions = append(f.root.Conditions, c("Paused", "True", "Paused", "", 30*time.Minute))
			},
		},
		{
			rule: RuleReferenceMissing, object: "DockerMachine ns/c1-md-x", provider: "infrastructure-docker", root: true,
			next: "kubectl get DockerMachine c1-md-x -n ns", evidence: "not found",
			setup: func(f *fixture) {
				m := f.machine("c1-md-x", false, healthyFacts("c1-md-x"), c("Ready", "True", "Ready", "", time.Hour))
				m.Children[0].Missing, m.Children[0].Error = true, "DockerMachine ns/c1-md-x not found"
			},
		},
		{
			rule: RuleWaitsForEndpoint, object: "DockerCluster ns/c1", provider: "infrastructure-docker", root: true,
			next: "kubectl logs -n capd-system deploy/capd-controller-manager | grep c1", evidence: `"Failed to create load balancer"`,
			setup: func(f *fixture) {
				f.in.Cluster.ControlPlaneEndpoint = ""
				f.root.Conditions[1] = c("InfrastructureReady", "False", "LoadBalancerFailed", "Failed to create load balancer", 30*time.Minute)
				f.infra.Conditions = []describe.Condition{c("Ready", "False", "LoadBalancerProvisioningFailed", "quota exhausted", 30*time.Minute)}
				f.machine("c1-cp-a", true, MachineFacts{Phase: "Pending"}, c("BootstrapConfigReady", "False", "NotReady", "KubeadmConfig status.initialization.dataSecretCreated is false", 30*time.Minute))
			},
		},
		{
			rule: RuleWaitsForControlPlane, object: "KubeadmControlPlane ns/c1-cp", provider: "control-plane-kubeadm", root: true,
			next: "kubectl logs -n capi-kubeadm-control-plane-system deploy/capi-kubeadm-control-plane-controller-manager | grep c1-cp", evidence: "ControlPlaneInitialized=False",
			setup: func(f *fixture) {
				f.root.Conditions[2] = c("ControlPlaneInitialized", "False", "NotInitialized", "Control plane not yet initialized", 40*time.Minute)
				f.machine("c1-md-a", false, MachineFacts{Phase: "Pending"}, c("BootstrapConfigReady", "False", "NotReady", "waiting", 30*time.Minute))
			},
		},
		{
			rule: RuleMachinePending, object: "Machine ns/c1-md-a", provider: "bootstrap-kubeadm", root: true,
			next: "kubectl logs -n capi-kubeadm-bootstrap-system deploy/capi-kubeadm-bootstrap-controller-manager | grep c1-md-a", evidence: `"KubeadmConfig is waiting"`,
			setup: func(f *fixture) {
				f.machine("c1-md-a", false, MachineFacts{Phase: "Pending"}, c("BootstrapConfigReady", "False", "NotReady", "KubeadmConfig is waiting", 30*time.Minute))
			},
		},
		{
			rule: RuleMachineProvisioning, object: "Machine ns/c1-md-a", provider: "infrastructure-docker", root: true,
			next: "kubectl logs -n capd-system deploy/capd-controller-manager | grep c1-md-a", evidence: `"Waiting for the container to start"`,
			setup: func(f *fixture) {
				m := f.machine("c1-md-a", false, MachineFacts{Phase: "Provisioning", DataSecret: "c1-md-a", BootstrapOK: true}, c("InfrastructureReady", "False", "NotReady", "DockerMachine is not ready", 25*time.Minute))
				m.Children[0].Conditions = []describe.Condition{c("Ready", "False", "ContainerProvisioning", "Waiting for the container to start", 25*time.Minute)}
			},
		},
		{
			rule: RuleNodeNotJoined, object: "Machine ns/c1-md-a", provider: "bootstrap-kubeadm", root: true,
			next: "capctl get kubeconfig c1 -n ns --write-to c1.kubeconfig && kubectl --kubeconfig c1.kubeconfig get nodes,pods -n kube-system -o wide", evidence: "none with providerID docker:////c1-md-a",
			setup: func(f *fixture) {
				f.machine("c1-md-a", false, MachineFacts{Phase: "Provisioned", ProviderID: "docker:////c1-md-a", BootstrapOK: true, InfraOK: true},
					c("InfrastructureReady", "True", "Ready", "", 20*time.Minute), c("NodeHealthy", "Unknown", "NodeDoesNotExist", "Waiting for a Node with spec.providerID docker:////c1-md-a to exist", 20*time.Minute))
			},
		},
		{
			rule: RuleRemoteConnection, object: "Cluster ns/c1", provider: "cluster-api", root: true,
			next: "curl -k https://10.0.0.1:6443/readyz", evidence: `"dial tcp 10.0.0.1:6443: i/o timeout"`,
			setup: func(f *fixture) {
				f.root.Conditions[3] = c("RemoteConnectionProbe", "False", "ProbeFailed", "dial tcp 10.0.0.1:6443: i/o timeout", 15*time.Minute)
				f.in.Workload = &Workload{Error: "cannot read the workload API server https://10.0.0.1:6443: no answer within 5s"}
			},
		},
		{
			rule: RuleWorkloadUnreachable, object: "Cluster ns/c1", provider: "cluster-api", root: true,
			next: "capctl get kubeconfig c1 -n ns --write-to c1.kubeconfig && kubectl --kubeconfig c1.kubeconfig get --raw /readyz", evidence: "no answer within 5s",
			setup: func(f *fixture) {
				f.in.Workload = &Workload{Error: "cannot read the workload API server https://10.0.0.1:6443: no answer within 5s"}
			},
		},
		{
			rule: RuleNodeNoCNI, object: "Cluster ns/c1", root: true,
			next: "kubectl get clusterresourcesets,clusterresourcesetbindings -n ns", evidence: `"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"`,
			setup: func(f *fixture) {
				f.machine("c1-cp-a", true, healthyFacts("c1-cp-a"), c("NodeReady", "False", "KubeletNotReady", "", 20*time.Minute))
				f.in.Workload.CNI = nil
				f.in.Workload.Nodes = []Node{{Name: "c1-cp-a", Ready: "False", Reason: "KubeletNotReady", ReadySince: now.Add(-20 * time.Minute),
					Message: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"}}
			},
		},
		{
			rule: RuleNodeNotReady, object: "Machine ns/c1-cp-a", provider: "infrastructure-docker", root: true,
			next: "capctl get kubeconfig c1 -n ns --write-to c1.kubeconfig && kubectl --kubeconfig c1.kubeconfig describe node c1-cp-a", evidence: `"Kubelet stopped posting node status."`,
			setup: func(f *fixture) {
				f.machine("c1-cp-a", true, healthyFacts("c1-cp-a"))
				f.in.Workload.Nodes = []Node{{Name: "c1-cp-a", Ready: "Unknown", Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", ReadySince: now.Add(-time.Hour)}}
			},
		},
		{
			rule: RuleDrainBlockedByPDB, object: "Machine ns/c1-md-a", provider: "cluster-api", root: true,
			next: "kubectl --kubeconfig c1.kubeconfig get pods -n web -l app=web -o wide", evidence: "PodDisruptionBudget web/web: disruptionsAllowed=0",
			setup: func(f *fixture) {
				m := f.machine("c1-md-a", false, healthyFacts("c1-md-a"), c("Deleting", "True", "DrainingNode", "Drain not completed yet:\n* Pod web/web-0: cannot evict pod", 30*time.Minute))
				m.Deleting = true
				f.in.Workload.BlockingPDBs = []PDB{{Namespace: "web", Name: "web", DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 2, ExpectedPods: 2, Selector: "app=web", Nodes: []string{"c1-md-a"}}}
			},
		},
		{
			rule: RuleMachineDeletingStuck, object: "Machine ns/c1-md-a", provider: "infrastructure-docker", root: true,
			next: "kubectl logs -n capd-system deploy/capd-controller-manager | grep c1-md-a", evidence: `"Waiting for DockerMachine to be deleted"`,
			setup: func(f *fixture) {
				m := f.machine("c1-md-a", false, healthyFacts("c1-md-a"), c("Deleting", "True", "WaitingForInfrastructureDeletion", "Waiting for DockerMachine to be deleted", 30*time.Minute))
				m.Deleting = true
			},
		},
		{
			rule: RuleRemediationShortCircut, object: "MachineHealthCheck ns/c1-workers", provider: "cluster-api", root: true,
			next: "kubectl get machinehealthcheck c1-workers -n ns -o yaml", evidence: `"Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy (total: 3, unhealthy: 2, maxUnhealthy: 40%)"`,
			setup: func(f *fixture) {
				one, three := int32(1), int32(3)
				f.root.Children = append(f.root.Children, &describe.Node{Kind: "MachineHealthCheck", APIVersion: coreAV, Namespace: "ns", Name: "c1-workers", Category: describe.CategoryHealthCheck,
					Conditions:  []describe.Condition{c("RemediationAllowed", "False", "TooManyUnhealthy", "Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy (total: 3, unhealthy: 2, maxUnhealthy: 40%)", 12*time.Minute)},
					HealthCheck: &describe.HealthCheck{Selected: 3, Unhealthy: []string{"c1-md-b", "c1-md-a"}, ExpectedMachines: &three, CurrentHealthy: &one}})
			},
		},
		{
			rule: RuleClusterNotAvailable, object: "Cluster ns/c1", provider: "cluster-api", root: true,
			next: "capctl describe cluster c1 -n ns --show-conditions all+", evidence: "first failing: KubeadmControlPlane ns/c1-cp Available=False",
			setup: func(f *fixture) {
				f.root.Conditions[0] = c("Available", "False", "NotAvailable", "* ControlPlaneAvailable: etcd is unhealthy", 10*time.Minute)
				f.root.FirstFailing = "KubeadmControlPlane ns/c1-cp Available=False (NotAvailable)"
			},
		},
	}
}

// TestRules puts the fixture into each rule's stuck state and checks the finding: the rule
// fires, names the object, the responsible provider (with its namespace and Deployment from the
// inventory), quotes the evidence, and gives the exact next command.
func TestRules(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range ruleCases() {
		t.Run(tc.rule, func(t *testing.T) {
			f := newFixture()
			tc.setup(f)
			r := Run(f.in)
			got := findingOf(t, r, tc.rule)
			if got.Object != tc.object {
				t.Errorf("object = %q, want %q", got.Object, tc.object)
			}
			if r.Healthy {
				t.Errorf("report says healthy with a %s finding", tc.rule)
			}
			if tc.root && !got.Root {
				t.Errorf("not the root finding; root is %+v", r.Root())
			}
			if got.Responsible == nil || got.Responsible.Provider != tc.provider {
				t.Errorf("responsible = %+v, want provider %q", got.Responsible, tc.provider)
			}
			if tc.provider != "" {
				p, _ := f.in.Management.Provider(tc.provider)
				if got.Responsible.Namespace != p.Namespace || got.Responsible.Deployment != p.Deployments[0].Name {
					t.Errorf("responsible = %+v, want namespace %s, Deployment %s", got.Responsible, p.Namespace, p.Deployments[0].Name)
				}
			}
			if !containsLine(got.Next, tc.next) {
				t.Errorf("next commands lack %q:\n%s", tc.next, strings.Join(got.Next, "\n"))
			}
			if !containsSub(got.Evidence, tc.evidence) {
				t.Errorf("evidence lacks %q:\n%s", tc.evidence, strings.Join(got.Evidence, "\n"))
			}
			if got.Explanation == "" || got.Summary == "" {
				t.Errorf("finding without explanation or summary: %+v", got)
			}
			covered[tc.rule] = true
		})
	}
	for _, r := range Rules() {
		if !covered[r.ID] {
			t.Errorf("rule %s has no test case", r.ID)
		}
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, want) {
			return true
		}
	}
	return false
}

func containsSub(lines []string, want string) bool {
	for _, l := range lines {
		if strings.Contains(l, want) {
			return true
		}
	}
	return false
}

// Not yet stuck: the same states, younger than StuckAfter, are no finding.
func TestTransitionalStatesWithinStuckAfter(t *testing.T) {
	f := newFixture()
	f.machine("c1-md-a", false, MachineFacts{Phase: "Pending"}, c("BootstrapConfigReady", "False", "NotReady", "waiting", 2*time.Minute))
	f.machine("c1-md-b", false, MachineFacts{Phase: "Provisioning", BootstrapOK: true}, c("InfrastructureReady", "False", "NotReady", "", 3*time.Minute))
	m := f.machine("c1-md-c", false, healthyFacts("c1-md-c"), c("Deleting", "True", "DrainingNode", "", time.Minute))
	m.Deleting = true
	r := Run(f.in)
	if !r.Healthy {
		t.Fatalf("young transitional states reported: %+v", r.Findings)
	}
	f.in.StuckAfter = time.Minute
	r = Run(f.in)
	if r.Problems() != 3 {
		t.Fatalf("with StuckAfter 1m want 3 problems, got %+v", r.Findings)
	}
}

// The furthest-upstream problem is the root: a stopped infrastructure controller comes before the
// Machines it leaves Provisioning, and the fallback rule stays quiet when a rule matched.
func TestRootIsFurthestUpstream(t *testing.T) {
	f := newFixture()
	f.machine("c1-md-a", false, MachineFacts{Phase: "Provisioning", BootstrapOK: true}, c("InfrastructureReady", "False", "NotReady", "", time.Hour))
	p, _ := f.in.Management.Provider("infrastructure-docker")
	p.ControllerAvailable = false
	f.root.Conditions[0] = c("Available", "False", "NotAvailable", "", time.Hour)
	r := Run(f.in)
	if len(r.Findings) != 2 || r.Findings[0].Rule != RuleProviderController || !r.Findings[0].Root || r.Findings[1].Rule != RuleMachineProvisioning || r.Findings[1].Root {
		t.Fatalf("order/root: %+v", r.Findings)
	}
}

// Without any management facts (no inventory) the bootstrap provider is still named, as unknown.
func TestResponsibleWithoutInventory(t *testing.T) {
	f := newFixture()
	f.in.Management = nil
	f.machine("c1-md-a", false, MachineFacts{Phase: "Pending"}, c("BootstrapConfigReady", "False", "NotReady", "", time.Hour))
	got := findingOf(t, Run(f.in), RuleMachinePending)
	if got.Responsible.Provider != "" || !strings.Contains(string(got.Responsible.Component), "KubeadmConfig.bootstrap.cluster.x-k8s.io") {
		t.Errorf("responsible = %+v", got.Responsible)
	}
	for _, n := range got.Next {
		if strings.Contains(n, "deploy/") {
			t.Errorf("a logs command without a known Deployment: %q", n)
		}
	}
}

// TestRulesTable checks the table itself: unique ids, one-sentence explanations, templates that
// parse, and a README line for every rule.
func TestRulesTable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "guides", "diagnose.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("duplicate rule id %s", r.ID)
		}
		seen[r.ID] = true
		if !strings.HasSuffix(r.Explanation, ".") || strings.Count(strings.TrimSuffix(r.Explanation, "."), ". ") > 0 {
			t.Errorf("%s: explanation is not one sentence: %q", r.ID, r.Explanation)
		}
		if r.Match == nil || r.Severity == "" || r.Component == "" || len(r.Next) == 0 {
			t.Errorf("%s: incomplete row", r.ID)
		}
		for _, n := range r.Next {
			if _, err := template.New(r.ID).Parse(n); err != nil {
				t.Errorf("%s: template %q: %v", r.ID, n, err)
			}
		}
		if !strings.Contains(string(readme), "`"+r.ID+"`") {
			t.Errorf("docs/guides/diagnose.md does not list rule %s", r.ID)
		}
	}
}

func TestRenderText(t *testing.T) {
	f := newFixture()
	ruleCases()[8].setup(f) // machine-pending-bootstrap
	var b strings.Builder
	if err := RenderText(&b, Run(f.in), RenderOptions{Now: now}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Cluster ns/c1: not healthy, 1 problem(s).",
		"1. ERROR machine-pending-bootstrap  Machine ns/c1-md-a  <- root cause: fix this first",
		"Since: 2026-01-01T11:30:00Z (30m ago)",
		`Machine c1-md-a: BootstrapConfigReady=False (NotReady): "KubeadmConfig is waiting"`,
		"Responsible: provider of the object (bootstrap-kubeadm v1.14.0, namespace capi-kubeadm-bootstrap-system, Deployment capi-kubeadm-bootstrap-controller-manager)",
		"kubectl logs -n capi-kubeadm-bootstrap-system deploy/capi-kubeadm-bootstrap-controller-manager | grep c1-md-a",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestNotCheckedIsNotHealthy: a management check whose input could not be read is reported as
// not checked and the cluster is not healthy, even though no rule found a problem; the same
// input read in full is healthy.
func TestNotCheckedIsNotHealthy(t *testing.T) {
	p := ProviderStatus{Name: "docker", Type: "InfrastructureProvider", Version: "v1.14.0", Namespace: "capd-system", ManifestLabel: "infrastructure-docker"}
	full := &Input{Management: &Management{CoreContract: "v1beta2", Providers: []ProviderStatus{p}}}
	if rep := Run(full); rep.Healthy {
		t.Fatalf("a provider without a Deployment is healthy: %+v", rep)
	}
	p.NotChecked = map[string]string{"controller": "cannot read deployments.apps (list in namespace capd-system: forbidden)"}
	partial := &Input{Management: &Management{CoreContract: "v1beta2", Providers: []ProviderStatus{p}}}
	rep := Run(partial)
	if rep.Healthy || rep.Problems() != 0 {
		t.Fatalf("unread controller: healthy %v, problems %d (%+v)", rep.Healthy, rep.Problems(), rep.Findings)
	}
	if len(rep.NotChecked) != 1 || rep.NotChecked[0].Rule != RuleProviderController || rep.NotChecked[0].Object != "Provider capd-system/infrastructure-docker" {
		t.Fatalf("not checked = %+v", rep.NotChecked)
	}
	var b strings.Builder
	if err := RenderText(&b, rep, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "not fully checked") || !strings.Contains(b.String(), "Not checked: provider-controller-unavailable for Provider capd-system/infrastructure-docker: cannot read deployments.apps") {
		t.Errorf("text:\n%s", b.String())
	}
	cm := &Input{Management: &Management{CoreContract: "v1beta2", CertManager: &CertManagerStatus{NotChecked: []string{"cannot read certificates.cert-manager.io (list in all namespaces: forbidden)"}}}}
	if rep := Run(cm); rep.Healthy || len(rep.NotChecked) != 1 || len(rep.Findings) != 0 {
		t.Errorf("unread cert-manager: %+v", rep)
	}
}
