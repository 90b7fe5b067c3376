package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/livemgmt"
	"github.com/capctl/capctl/internal/testenv"
)

// v1beta1Version is the newest Cluster API release on the v1beta1 contract whose core and test
// modules the Go module proxy serves and that builds (hack/live-bins.sh, CAPI_E2E_SETS), and
// v1beta1K8s a Kubernetes version its kubeadm control plane accepts.
const (
	v1beta1Version = "v1.10.10"
	v1beta1K8s     = "v1.33.0"
)

// TestV1Beta1ManagementClusterLive: a management cluster on the v1beta1 contract, as a team that
// has not moved to v1beta2 runs it: clusterctl v1.10 installs the v1.10 providers (run by v1.10
// managers; capctl, like clusterctl v1.14, refuses a v1beta1 core provider), and the
// controllers bring an in-memory cluster to Available; capctl describes it and reports the
// contract. This is the source side of a blue/green replacement.
func TestV1Beta1ManagementClusterLive(t *testing.T) {
	e := start(t, 1, v1beta1Version)
	mgmt := e.clusters[0]
	out, err := e.capctl(mgmt, "init", "--core", "cluster-api:"+v1beta1Version, "--bootstrap", "kubeadm:"+v1beta1Version,
		"--control-plane", "kubeadm:"+v1beta1Version, "--infrastructure", "docker:"+v1beta1Version)
	if err == nil || !strings.Contains(out, "v1beta1 contract") {
		t.Errorf("capctl init of a v1beta1 core provider: want the refusal naming the contract, got %v:\n%s", err, out)
	}
	e.initV1Beta1(mgmt)
	if t.Failed() {
		t.FailNow()
	}
	if got := managerVersions(t, mgmt); !allMinor(got, "v1.10.") {
		t.Fatalf("after init at %s the managers run %v", v1beta1Version, got)
	}
	if gvk := servedClusterGVK(mgmt); gvk.Version != "v1beta1" {
		t.Fatalf("a %s management cluster serves Cluster at %s, want v1beta1", v1beta1Version, gvk.Version)
	}
	e.createCluster(mgmt, ns, "old-1", v1beta1K8s, 1)
	e.waitAvailable(mgmt, ns, "old-1", 8*time.Minute)

	out = e.mustCapctl(mgmt, "describe", "cluster", "old-1", "-n", ns)
	for _, want := range []string{"Cluster " + ns + "/old-1", "MachineDeployment " + ns + "/old-1-md-0"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	out = e.mustCapctl(mgmt, "get", "providers")
	if !strings.Contains(out, "v1beta1") || !strings.Contains(out, v1beta1Version) {
		t.Errorf("get providers does not show the v1beta1 contract and %s:\n%s", v1beta1Version, out)
	}
}

// initV1Beta1 installs the four providers at v1beta1Version with that release's clusterctl, as
// the management cluster's owners did, under init's CPU gate (see initAt).
func (e *e2e) initV1Beta1(c *livemgmt.Cluster) {
	e.t.Helper()
	bin := testenv.ClusterctlV1Beta1(e.t)
	initGate <- struct{}{}
	defer func() { <-initGate }()
	args := []string{"init", "--core", "cluster-api:" + v1beta1Version, "--bootstrap", "kubeadm:" + v1beta1Version,
		"--control-plane", "kubeadm:" + v1beta1Version, "--infrastructure", "docker:" + v1beta1Version,
		"--wait-providers", "--config", e.config, "--kubeconfig", c.Kubeconfig}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := e.commandOf(ctx, c, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	e.t.Logf("$ clusterctl %s %s (%s)\n%s", v1beta1Version, strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), out.String())
	if err != nil {
		e.t.Fatalf("clusterctl %s init on %s: %v", v1beta1Version, c.Name, err)
	}
	e.waitWebhooksAnswer(c)
}
