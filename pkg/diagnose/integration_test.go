package diagnose_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/diagnosetest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/diagnose"
)

type C = diagnosetest.C

const (
	m30 = 30 * time.Minute
)

// stuckCase is a cluster put into one runbook state on a real API server, and the finding the
// diagnosis must make of it.
type stuckCase struct {
	ns       string
	build    func(cl *diagnosetest.Cluster)
	rule     string
	object   string
	provider string // manifest label of the responsible provider ("" for none)
	next     string // a command the finding must carry (prefix)
	evidence string
	// workload: "live" points the kubeconfig Secret at the workload API server, "dead" at a port
	// where nothing listens, "" writes no Secret.
	workload string
}

func stuckCases() []stuckCase {
	pending := C{Type: "BootstrapConfigReady", Status: "False", Reason: "NotReady", Message: "KubeadmConfig status.initialization.dataSecretCreated is false", Ago: m30}
	return []stuckCase{
		{ns: "pending", rule: diagnose.RuleMachinePending, object: "Machine pending/c-md-a", provider: "bootstrap-kubeadm",
			next: "kubectl logs -n capi-kubeadm-bootstrap-system deploy/capi-kubeadm-bootstrap-controller-manager | grep c-md-a", evidence: `"KubeadmConfig status.initialization.dataSecretCreated is false"`,
			build: func(cl *diagnosetest.Cluster) {
				cl.AddMachine(diagnosetest.Machine{Name: "c-md-a", Phase: "Pending", Conditions: []C{pending}})
			}},
		{ns: "endpoint", rule: diagnose.RuleWaitsForEndpoint, object: "DockerCluster endpoint/c", provider: "infrastructure-docker",
			next: "kubectl logs -n capd-system deploy/capd-controller-manager | grep c", evidence: `"Failed to create load balancer"`,
			build: func(cl *diagnosetest.Cluster) {
				cl.NoEndpoint().SetCondition(C{Type: "InfrastructureReady", Status: "False", Reason: "LoadBalancerFailed", Message: "Failed to create load balancer", Ago: m30}).
					SetInfraCondition(C{Type: "Ready", Status: "False", Reason: "LoadBalancerProvisioningFailed", Message: "quota exhausted", Ago: m30}).
					AddMachine(diagnosetest.Machine{Name: "c-cp-a", ControlPlane: true, Phase: "Pending", Conditions: []C{pending}})
			}},
		{ns: "waitcp", rule: diagnose.RuleWaitsForControlPlane, object: "KubeadmControlPlane waitcp/c-cp", provider: "control-plane-kubeadm",
			next: "kubectl logs -n capi-kubeadm-control-plane-system deploy/capi-kubeadm-control-plane-controller-manager | grep c-cp", evidence: `ControlPlaneInitialized=False`,
			build: func(cl *diagnosetest.Cluster) {
				cl.SetCondition(C{Type: "ControlPlaneInitialized", Status: "False", Reason: "NotInitialized", Message: "Control plane not yet initialized", Ago: m30}).
					AddMachine(diagnosetest.Machine{Name: "c-md-a", Phase: "Pending", Conditions: []C{pending}})
			}},
		{ns: "provisioning", rule: diagnose.RuleMachineProvisioning, object: "Machine provisioning/c-md-a", provider: "infrastructure-docker",
			next: "kubectl logs -n capd-system deploy/capd-controller-manager | grep c-md-a", evidence: `"Waiting for the container to start"`,
			build: func(cl *diagnosetest.Cluster) {
				cl.AddMachine(diagnosetest.Machine{Name: "c-md-a", Phase: "Provisioning", DataSecret: true,
					Conditions:      []C{{Type: "InfrastructureReady", Status: "False", Reason: "NotReady", Message: "DockerMachine is not ready", Ago: m30}},
					InfraConditions: []C{{Type: "Ready", Status: "False", Reason: "ContainerProvisioning", Message: "Waiting for the container to start", Ago: m30}}})
			}},
		{ns: "notjoined", rule: diagnose.RuleNodeNotJoined, object: "Machine notjoined/c-md-a", provider: "bootstrap-kubeadm",
			next: "capctl get kubeconfig c -n notjoined --write-to c.kubeconfig && kubectl --kubeconfig c.kubeconfig get nodes,pods -n kube-system -o wide", evidence: "none with providerID docker:////c-md-a",
			workload: "live",
			build: func(cl *diagnosetest.Cluster) {
				cl.AddMachine(diagnosetest.Machine{Name: "c-md-a", Phase: "Provisioned", DataSecret: true, ProviderID: "docker:////c-md-a",
					Conditions: []C{{Type: "InfrastructureReady", Status: "True", Reason: "Ready", Ago: m30},
						{Type: "NodeHealthy", Status: "Unknown", Reason: "NodeDoesNotExist", Message: "Waiting for a Node with spec.providerID docker:////c-md-a to exist", Ago: m30}}})
			}},
		{ns: "nocni", rule: diagnose.RuleNodeNoCNI, object: "Cluster nocni/c", workload: "live",
			next: "kubectl get clusterresourcesets,clusterresourcesetbindings -n nocni", evidence: "cni plugin not initialized",
			build: func(cl *diagnosetest.Cluster) {
				cl.AddMachine(diagnosetest.Machine{Name: "c-cp-a", ControlPlane: true, Phase: "Running", DataSecret: true, ProviderID: "docker:////w-nocni", NodeName: "w-nocni",
					Conditions: []C{{Type: "NodeReady", Status: "False", Reason: "KubeletNotReady", Ago: m30}}})
			}},
		{ns: "drain", rule: diagnose.RuleDrainBlockedByPDB, object: "Machine drain/c-md-a", provider: "cluster-api", workload: "live",
			next: "kubectl --kubeconfig c.kubeconfig get pods -n web -l app=web -o wide", evidence: "PodDisruptionBudget web/web: disruptionsAllowed=0",
			build: func(cl *diagnosetest.Cluster) {
				cl.AddMachine(diagnosetest.Machine{Name: "c-md-a", Phase: "Deleting", DataSecret: true, ProviderID: "docker:////w-drain", NodeName: "w-drain", Deleting: true,
					Conditions: []C{{Type: "Deleting", Status: "True", Reason: "DrainingNode", Message: "Drain not completed yet (started at 2026-01-01T11:30:00Z):\n* Pod web/web-0: cannot evict pod", Ago: m30}}})
			}},
		{ns: "deleting", rule: diagnose.RuleMachineDeletingStuck, object: "Machine deleting/c-md-a", provider: "infrastructure-docker",
			next: "kubectl logs -n capd-system deploy/capd-controller-manager | grep c-md-a", evidence: `"Waiting for DockerMachine to be deleted"`,
			build: func(cl *diagnosetest.Cluster) {
				cl.AddMachine(diagnosetest.Machine{Name: "c-md-a", Phase: "Deleting", DataSecret: true, ProviderID: "docker:////c-md-a", NodeName: "c-md-a", Deleting: true,
					Conditions: []C{{Type: "Deleting", Status: "True", Reason: "WaitingForInfrastructureDeletion", Message: "Waiting for DockerMachine to be deleted", Ago: m30}}})
			}},
		{ns: "notready", rule: diagnose.RuleNodeNotReady, object: "Machine notready/c-cp-a", provider: "infrastructure-docker",
			next: "capctl get kubeconfig c -n notready --write-to c.kubeconfig && kubectl --kubeconfig c.kubeconfig describe node c-cp-a", evidence: `"Kubelet stopped posting node status."`,
			build: func(cl *diagnosetest.Cluster) {
				cl.AddMachine(diagnosetest.Machine{Name: "c-cp-a", ControlPlane: true, Phase: "Running", DataSecret: true, ProviderID: "docker:////c-cp-a", NodeName: "c-cp-a",
					Conditions: []C{{Type: "NodeReady", Status: "Unknown", Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", Ago: m30}}})
			}},
		{ns: "unreachable", rule: diagnose.RuleWorkloadUnreachable, object: "Cluster unreachable/c", provider: "cluster-api", workload: "dead",
			next: "capctl get kubeconfig c -n unreachable --write-to c.kubeconfig && kubectl --kubeconfig c.kubeconfig get --raw /readyz", evidence: "cannot read the workload API server https://127.0.0.1:1",
			build: func(cl *diagnosetest.Cluster) {}},
		{ns: "remote", rule: diagnose.RuleRemoteConnection, object: "Cluster remote/c", provider: "cluster-api", workload: "dead",
			next: "curl -k https://10.0.0.1:6443/readyz", evidence: `"dial tcp 10.0.0.1:6443: i/o timeout"`,
			build: func(cl *diagnosetest.Cluster) {
				cl.SetCondition(C{Type: "RemoteConnectionProbe", Status: "False", Reason: "ProbeFailed", Message: "dial tcp 10.0.0.1:6443: i/o timeout", Ago: m30})
			}},
		{ns: "paused", rule: diagnose.RuleClusterPaused, object: "Cluster paused/c",
			next: `kubectl patch cluster c -n paused --type merge -p '{"spec":{"paused":false}}'`, evidence: "Paused=True",
			build: func(cl *diagnosetest.Cluster) { cl.Pause() }},
		{ns: "mhc", rule: diagnose.RuleRemediationShortCircut, object: "MachineHealthCheck mhc/c-workers", provider: "cluster-api",
			next: "kubectl get machinehealthcheck c-workers -n mhc -o yaml", evidence: `"Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy (total: 3, unhealthy: 2, maxUnhealthy: 40%)"`,
			build: func(cl *diagnosetest.Cluster) {
				cl.AddHealthCheck("c-workers", 3, 1, C{Type: "RemediationAllowed", Status: "False", Reason: "TooManyUnhealthy",
					Message: "Remediation is not allowed, the number of not started or unhealthy machines exceeds maxUnhealthy (total: 3, unhealthy: 2, maxUnhealthy: 40%)", Ago: m30})
			}},
		{ns: "missing", rule: diagnose.RuleReferenceMissing, object: "DockerMachine missing/c-md-a", provider: "infrastructure-docker",
			next: "kubectl get DockerMachine c-md-a -n missing", evidence: "not found",
			build: func(cl *diagnosetest.Cluster) {
				cl.AddMachine(diagnosetest.Machine{Name: "c-md-a", Phase: "Running", DataSecret: true, ProviderID: "docker:////c-md-a", NodeName: "c-md-a", NoInfra: true,
					Conditions: []C{{Type: "NodeReady", Status: "True", Reason: "NodeReady", Ago: time.Hour}}})
			}},
		{ns: "unavailable", rule: diagnose.RuleClusterNotAvailable, object: "Cluster unavailable/c", provider: "cluster-api",
			next: "capctl describe cluster c -n unavailable --show-conditions all+", evidence: `"* ControlPlaneAvailable: etcd is unhealthy"`,
			build: func(cl *diagnosetest.Cluster) {
				cl.SetCondition(C{Type: "Available", Status: "False", Reason: "NotAvailable", Message: "* ControlPlaneAvailable: etcd is unhealthy", Ago: m30})
			}},
	}
}

func fixedNow() time.Time { return diagnosetest.Now }

// TestRulesOnAPIServer creates each runbook case on a real management API server (and, for the
// cases that read it, a second API server as the workload cluster behind a kubeconfig Secret),
// diagnoses it through the fetchers and checks the finding, the named provider and the command.
// Then it breaks the management side (infrastructure controller stopped, webhook without
// endpoints, an incompatible contract, cert-manager down) and checks those rules.
func TestRulesOnAPIServer(t *testing.T) {
	testenv.Integration(t)
	testenv.FixturesDir(t)
	ctx := context.Background()
	mgmt, wl := testenv.StartPair(t, testenv.Options{})
	diagnosetest.Management(ctx, t, mgmt)
	wlKubeconfig, err := os.ReadFile(wl.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The workload cluster: a Node without CNI, a Node whose pod a PDB protects.
	diagnosetest.WorkloadNode(ctx, t, wl.Client, "w-nocni", corev1.ConditionFalse, "KubeletNotReady",
		"container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized", m30)
	diagnosetest.WorkloadNode(ctx, t, wl.Client, "w-drain", corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", time.Hour)
	diagnosetest.BlockingPDB(ctx, t, wl.Client, "web", "web", "w-drain")

	cases := stuckCases()
	for _, tc := range cases {
		cl := diagnosetest.NewCluster(tc.ns, "c")
		tc.build(cl)
		cl.Create(ctx, t, mgmt)
		switch tc.workload {
		case "live":
			diagnosetest.KubeconfigSecret(ctx, t, mgmt.Client, tc.ns, "c", wlKubeconfig)
		case "dead":
			diagnosetest.KubeconfigSecret(ctx, t, mgmt.Client, tc.ns, "c", diagnosetest.UnreachableKubeconfig)
		}
	}
	// Cases without a kubeconfig Secret do not read a workload cluster (a missing Secret is a
	// finding of its own, tested by the "dead" cases).
	workloadOf := map[string]bool{}
	for _, tc := range cases {
		workloadOf[tc.ns] = tc.workload != ""
	}
	opts := func(ns string) diagnose.ClusterRequest {
		return diagnose.ClusterRequest{Namespace: ns, Name: "c", Workload: workloadOf[ns], WorkloadTimeout: 3 * time.Second, Now: fixedNow}
	}

	covered := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			before := mgmt.Client.Requests()
			rep, err := diagnose.Cluster(ctx, mgmt.Client, opts(tc.ns))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d API requests to the management cluster", tc.ns, mgmt.Client.Requests()-before)
			checkFinding(t, rep, tc.rule, tc.object, tc.provider, tc.next, tc.evidence)
			logText(t, rep)
			covered[tc.rule] = true
		})
	}

	t.Run("fleet lists problems first with their root cause", func(t *testing.T) {
		healthy := diagnosetest.NewCluster("fine", "c")
		healthy.Create(ctx, t, mgmt)
		fr, err := diagnose.Clusters(ctx, mgmt.Client, diagnose.ClustersRequest{ClusterRequest: diagnose.ClusterRequest{Workload: false, Now: fixedNow}, AllNamespaces: true})
		if err != nil {
			t.Fatal(err)
		}
		if fr.Healthy || len(fr.Clusters) != len(cases)+1 {
			t.Fatalf("fleet of %d clusters, healthy %v", len(fr.Clusters), fr.Healthy)
		}
		seenHealthy := false
		for _, r := range fr.Clusters {
			if r.Healthy {
				seenHealthy = true
			} else if seenHealthy || r.Root == nil {
				t.Errorf("%s/%s: problems after a healthy cluster, or no root cause: %+v", r.Namespace, r.Name, r)
			}
		}
		// Without the workload cluster the drain is still reported, as a stuck deletion.
		for _, r := range fr.Clusters {
			if r.Namespace == "drain" && (r.Root == nil || r.Root.Rule != diagnose.RuleMachineDeletingStuck) {
				t.Errorf("drain without the workload cluster: %+v", r.Root)
			}
		}
	})

	t.Run("fleet finds what diagnose cluster finds, row by row", func(t *testing.T) { testFleetOnAPIServer(ctx, t, mgmt) })

	// The management side breaks: each rule becomes the root cause of a cluster using the provider.
	docker := diagnosetest.ProviderOf("infrastructure-docker")
	t.Run(diagnose.RuleProviderController, func(t *testing.T) {
		diagnosetest.Deployment(ctx, t, mgmt.Client, docker.Namespace, docker.Deployment, nil, nil, false)
		defer diagnosetest.Deployment(ctx, t, mgmt.Client, docker.Namespace, docker.Deployment, nil, nil, true)
		rep, err := diagnose.Cluster(ctx, mgmt.Client, opts("provisioning"))
		if err != nil {
			t.Fatal(err)
		}
		f := checkFinding(t, rep, diagnose.RuleProviderController, "Provider capd-system/infrastructure-docker", "infrastructure-docker",
			"kubectl get pods -n capd-system -l cluster.x-k8s.io/provider=infrastructure-docker -o wide", "Deployment capd-system/capd-controller-manager not available")
		if !f.Root {
			t.Errorf("a stopped infrastructure controller is not the root cause: %+v", rep.Root())
		}
		logText(t, rep)
		findingIn(t, rep, diagnose.RuleMachineProvisioning) // still reported, downstream
		covered[diagnose.RuleProviderController] = true
	})
	t.Run("a controller scaled to 0 does not run", func(t *testing.T) {
		d := &appsv1.Deployment{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: docker.Namespace, Name: docker.Deployment}, d); err != nil {
			t.Fatal(err)
		}
		scale := func(n int32) {
			b, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": n}})
			if err := mgmt.Client.Patch(ctx, d, client.RawPatch(types.MergePatchType, b)); err != nil {
				t.Fatal(err)
			}
		}
		scale(0)
		defer scale(1)
		rep, err := diagnose.Cluster(ctx, mgmt.Client, opts("provisioning"))
		if err != nil {
			t.Fatal(err)
		}
		checkFinding(t, rep, diagnose.RuleProviderController, "Provider capd-system/infrastructure-docker", "infrastructure-docker",
			"kubectl get pods -n capd-system", "is scaled to 0 replicas")
	})
	t.Run(diagnose.RuleProviderWebhook, func(t *testing.T) {
		svc := diagnosetest.WebhookWithoutEndpoints(ctx, t, mgmt.Client, diagnosetest.ProviderOf("bootstrap-kubeadm"))
		rep, err := diagnose.Cluster(ctx, mgmt.Client, opts("pending"))
		if err != nil {
			t.Fatal(err)
		}
		checkFinding(t, rep, diagnose.RuleProviderWebhook, "Provider capi-kubeadm-bootstrap-system/bootstrap-kubeadm", "bootstrap-kubeadm",
			"kubectl get endpointslices -n capi-kubeadm-bootstrap-system -l kubernetes.io/service-name="+svc, "has no ready endpoints")
		covered[diagnose.RuleProviderWebhook] = true
	})
	t.Run(diagnose.RuleProviderContract, func(t *testing.T) {
		diagnosetest.RelabelContract(ctx, t, mgmt.Client, "infrastructure-docker", "v1beta2", "v1alpha4")
		defer diagnosetest.RelabelContract(ctx, t, mgmt.Client, "infrastructure-docker", "v1alpha4", "v1beta2")
		rep, err := diagnose.Cluster(ctx, mgmt.Client, opts("provisioning"))
		if err != nil {
			t.Fatal(err)
		}
		checkFinding(t, rep, diagnose.RuleProviderContract, "Provider capd-system/infrastructure-docker", "infrastructure-docker", "capctl upgrade plan", "declare contract v1alpha4")
		covered[diagnose.RuleProviderContract] = true
	})
	t.Run(diagnose.RuleCertManager, func(t *testing.T) {
		diagnosetest.Deployment(ctx, t, mgmt.Client, "cert-manager", "cert-manager-webhook", nil, nil, false)
		defer diagnosetest.Deployment(ctx, t, mgmt.Client, "cert-manager", "cert-manager-webhook", nil, nil, true)
		rep, err := diagnose.Cluster(ctx, mgmt.Client, opts("fine"))
		if err != nil {
			t.Fatal(err)
		}
		checkFinding(t, rep, diagnose.RuleCertManager, "Namespace cert-manager", "", "kubectl get deployments,pods -n cert-manager", "cert-manager/cert-manager-webhook not available")
		covered[diagnose.RuleCertManager] = true
	})
	t.Run("get providers", func(t *testing.T) {
		m, err := diagnose.Providers(ctx, mgmt.Client)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Providers) != 4 || m.CoreContract != "v1beta2" {
			t.Fatalf("providers: %+v", m)
		}
		for _, p := range m.Providers {
			want := diagnosetest.ProviderOf(p.ManifestLabel)
			if p.Namespace != want.Namespace || p.Contract != "v1beta2" || !p.ContractCompatible || !p.ControllerAvailable || len(p.CRDs) == 0 ||
				len(p.Deployments) != 1 || p.Deployments[0].Name != want.Deployment {
				t.Errorf("%s: %+v", p.ManifestLabel, p)
			}
		}
		core, _ := m.Provider("cluster-api")
		if got := core.Deployments[0].Concurrency; got["--cluster-concurrency"] != "10" || got["--machine-concurrency"] != "10" {
			t.Errorf("core concurrency flags: %v", got)
		}
		capd, _ := m.Provider("infrastructure-docker")
		if got := capd.Deployments[0].Concurrency; got["--concurrency"] != "5" {
			t.Errorf("capd concurrency flags (space-separated value): %v", got)
		}
		boot, _ := m.Provider("bootstrap-kubeadm")
		if boot.WebhookAnswers == nil || *boot.WebhookAnswers || core.WebhookAnswers != nil {
			t.Errorf("webhook state: bootstrap %v, core %v", boot.WebhookAnswers, core.WebhookAnswers)
		}
	})

	for _, r := range diagnose.Rules() {
		if !covered[r.ID] {
			t.Errorf("rule %s was not exercised on the API server", r.ID)
		}
	}
}

// logText shows the report as people read it (go test -v).
func logText(t *testing.T, rep *diagnose.Report) {
	var b strings.Builder
	if err := diagnose.RenderText(&b, rep, diagnose.RenderOptions{Now: diagnosetest.Now}); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
}

func findingIn(t *testing.T, rep *diagnose.Report, rule string) *diagnose.Finding {
	t.Helper()
	for i := range rep.Findings {
		if rep.Findings[i].Rule == rule {
			return &rep.Findings[i]
		}
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Rule+" "+f.Object)
	}
	t.Fatalf("no %s finding; got %v (workload %+v)", rule, got, rep.Workload)
	return nil
}

func checkFinding(t *testing.T, rep *diagnose.Report, rule, object, prov, next, evidence string) *diagnose.Finding {
	t.Helper()
	f := findingIn(t, rep, rule)
	if f.Object != object {
		t.Errorf("object = %q, want %q", f.Object, object)
	}
	if rep.Healthy {
		t.Errorf("healthy with a %s finding", rule)
	}
	if f.Responsible == nil || f.Responsible.Provider != prov {
		t.Errorf("responsible = %+v, want %q", f.Responsible, prov)
	} else if prov != "" {
		want := diagnosetest.ProviderOf(prov)
		if f.Responsible.Namespace != want.Namespace || f.Responsible.Deployment != want.Deployment {
			t.Errorf("responsible = %+v, want %s/%s", f.Responsible, want.Namespace, want.Deployment)
		}
	}
	ok := false
	for _, n := range f.Next {
		ok = ok || strings.HasPrefix(n, next)
	}
	if !ok {
		t.Errorf("next commands lack %q:\n%s", next, strings.Join(f.Next, "\n"))
	}
	ok = false
	for _, e := range f.Evidence {
		ok = ok || strings.Contains(e, evidence)
	}
	if !ok {
		t.Errorf("evidence lacks %q:\n%s", evidence, strings.Join(f.Evidence, "\n"))
	}
	return f
}
