// Package e2e runs capctl against live management clusters (internal/testing/livemgmt): the real Cluster
// API controllers reconcile what capctl does, and every status the tests read is theirs.
package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/internal/testing/testenv"
)

var capctlBin string

// initGate bounds the inits that run at once (initAt).
var initGate = make(chan struct{}, runtime.NumCPU())

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test here skips under -short: no capctl build needed
	}
	// This process runs every management cluster's kubelet stand-in and the tests' waits: it
	// collects as the servers do (testenv.ServerGOGC); nothing here measures its memory.
	if gc, err := strconv.Atoi(testenv.ServerGOGC); err == nil {
		debug.SetGCPercent(gc)
	}
	dir, err := os.MkdirTemp("", "capctl-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if capctlBin, err = testenv.CapctlBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The cluster budget, not -parallel, bounds how many tests run at once.
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", fmt.Sprint(livemgmt.Capacity()))
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// e2e is one test's view: the host, its management clusters, capctl's configuration.
type e2e struct {
	t        *testing.T
	host     *livemgmt.Host
	clusters []*livemgmt.Cluster
	config   string
	home     string
	// kubeconfigs is a KUBECONFIG list with one context per management cluster (see
	// useContexts), for the commands run over several of them (capctl and startCapctl with nil).
	kubeconfigs string
}

func start(t *testing.T, n int, versions ...string) *e2e {
	t.Helper()
	sideBySide(t)
	fixtures := testenv.FixturesDir(t)
	host, clusters := livemgmt.Start(t, n, versions...)
	home := t.TempDir()
	cfg, err := livemgmt.WriteConfig(filepath.Join(home, "config"), fixtures)
	if err != nil {
		t.Fatal(err)
	}
	if err := livemgmt.WriteTestOverrides(filepath.Join(home, "config"), fixtures); err != nil {
		t.Fatal(err)
	}
	return &e2e{t: t, host: host, clusters: clusters, config: cfg, home: home}
}

// sideBySide runs t beside the other live tests: each has its own management clusters, and
// with a network namespace per cluster its own CAPD too (livemgmt.Start bounds how many
// clusters run at once). On a shared network they would only queue for the host's one CAPD.
func sideBySide(t *testing.T) {
	if why := livemgmt.NetnsUnavailable(); why == "" {
		t.Parallel()
	} else if !testing.Short() {
		t.Logf("running alone: the management clusters share one CAPD (%s)", why)
	}
}

// capctl runs the binary against management cluster c (nil: no --kubeconfig).
func (e *e2e) capctl(c *livemgmt.Cluster, args ...string) (string, error) {
	e.t.Helper()
	args = append(args, "--config", e.config)
	if c != nil {
		args = append(args, "--kubeconfig", c.Kubeconfig)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := e.command(ctx, c, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	e.t.Logf("$ capctl %s (%s)\n%s", strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), out.String())
	return out.String(), err
}

// command is the capctl process of args (with --config and --kubeconfig already added) as the
// user would start it, for tests that drive the process themselves (signals, live output). It
// runs from management cluster c's network (nil: the host's), where the in-memory workload
// clusters that c's CAPD serves answer, as an operator's shell on that network would.
func (e *e2e) command(ctx context.Context, c *livemgmt.Cluster, args ...string) *exec.Cmd {
	return e.commandOf(ctx, c, capctlBin, args...)
}

// commandOf is command for another binary (a clusterctl).
func (e *e2e) commandOf(ctx context.Context, c *livemgmt.Cluster, bin string, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if c != nil {
		cmd = c.Command(ctx, bin, args...)
	} else {
		cmd = exec.CommandContext(ctx, bin, args...)
	}
	env := os.Environ()
	if c == nil && e.kubeconfigs != "" {
		env = append(env, "KUBECONFIG="+e.kubeconfigs)
	}
	// ClusterClass clusters (the in-memory flavor) need the topology feature gate, as
	// clusterctl's quick start sets it.
	cmd.Env = append(env, "NO_COLOR=1", "CLUSTER_TOPOLOGY=true",
		"XDG_CONFIG_HOME="+filepath.Join(e.home, "xdg-config"), "XDG_CACHE_HOME="+filepath.Join(e.home, "xdg-cache"))
	return cmd
}

func (e *e2e) mustCapctl(c *livemgmt.Cluster, args ...string) string {
	e.t.Helper()
	out, err := e.capctl(c, args...)
	if err != nil {
		e.t.Fatalf("capctl %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// moveHandingOver runs `capctl move -n ns --settle 3m --to-kubeconfig dst` (args added) from src
// and, as a real move hands the infrastructure over, hands cluster name's in-memory machines to
// dst's CAPD (Host.MoveCAPD) as soon as dst holds the Cluster unpaused: inside the move's settle
// check, which then watches the target's controllers with their infrastructure. Handed over
// after the move instead, the target's controllers spend the settle period without it, and a
// loaded CI run ended the default minute with the cluster not Available there (the check's
// finding, true of that order). The period is 3 minutes: the hand-over and the controllers'
// next reconcile fall inside it on a loaded machine.
func (e *e2e) moveHandingOver(src, dst *livemgmt.Cluster, ns, name string, args ...string) string {
	e.t.Helper()
	handed := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if u, err := getCluster(ctx, dst, ns, name); err == nil {
				if p, _, _ := unstructured.NestedBool(u.Object, "spec", "paused"); !p {
					handed <- e.host.MoveCAPD(ctx, dst)
					return
				}
			}
			time.Sleep(500 * time.Millisecond)
		}
		handed <- ctx.Err()
	}()
	out, err := e.capctl(src, append([]string{"move", "-n", ns, "--settle", "3m", "--to-kubeconfig", dst.Kubeconfig}, args...)...)
	if err != nil {
		cancel()
		<-handed
		e.t.Fatalf("capctl move -n %s to %s: %v", ns, dst.Name, err)
	}
	if !strings.Contains(out, "Settled:") {
		e.t.Errorf("the move did not report its settle check:\n%s", out)
	}
	if err := <-handed; err != nil {
		e.t.Fatalf("handing the infrastructure of %s/%s over to %s: %v", ns, name, dst.Name, err)
	}
	return out
}

// initAt installs the four providers at one version with init's default wait (the managers'
// Deployments available, their webhook Services with endpoints, every CA injected), then waits
// until the API server calls each provider's webhook with the injected CA. Safe in parallel
// goroutines: it reports with Errorf, callers check Failed.
func (e *e2e) initAt(c *livemgmt.Cluster, version string) {
	e.t.Helper()
	// init is the one CPU-heavy phase (the API server builds 35 large CRDs): run as many at once
	// as the machine has cores, so that parallel tests do not push each other's CRDs past init's
	// establish timeout. Waiting for controllers, the rest of a test, costs little CPU.
	initGate <- struct{}{}
	defer func() { <-initGate }()
	if _, err := e.capctl(c, "init", "--core", "cluster-api:"+version, "--bootstrap", "kubeadm:"+version,
		"--control-plane", "kubeadm:"+version, "--infrastructure", "docker:"+version); err != nil {
		e.t.Errorf("capctl init on %s: %v", c.Name, err)
		return
	}
	e.waitWebhooksAnswer(c)
}

// webhookProbes are one kind per provider that init installs, each with a defaulting webhook:
// an empty object's dry-run create reaches it before any schema check.
var webhookProbes = []schema.GroupVersionKind{
	clusterGVK,
	{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmConfigTemplate"},
	{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmControlPlaneTemplate"},
	{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DockerClusterTemplate"},
}

// waitWebhooksAnswer dry-runs a create of each webhookProbes kind until its provider's webhook
// answers. Once init has seen the CA injected, the API server's own copy of a webhook
// configuration may lag for a moment and still call without it ("certificate signed by unknown
// authority": seen in clean-clone CI runs, for the core and then for the bootstrap provider,
// seconds after the managers started); a user applying right then gets that error too. Any
// answer from the webhook, an admission refusal included, ends the wait for that kind.
func (e *e2e) waitWebhooksAnswer(c *livemgmt.Cluster) {
	e.t.Helper()
	ctx := context.Background()
	start := time.Now()
	for _, probe := range webhookProbes {
		gvk := served(c, probe)
		var last error
		for {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			u.SetNamespace(metav1.NamespaceDefault)
			u.SetName("webhook-probe")
			last = c.Client.Create(ctx, u, client.DryRunAll)
			if last == nil || !strings.Contains(last.Error(), "failed calling webhook") {
				break
			}
			if time.Since(start) > time.Minute {
				e.t.Errorf("the %s webhook on %s did not answer within a minute of init: %v", gvk.Kind, c.Name, last)
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	if d := time.Since(start); d > time.Second {
		e.t.Logf("the providers' webhooks answered on %s %s after init returned", c.Name, d.Round(100*time.Millisecond))
	}
}

// createCluster generates an in-memory ClusterClass cluster with capctl and creates it.
func (e *e2e) createCluster(c *livemgmt.Cluster, ns, name, k8s string, workers int) {
	e.t.Helper()
	path := filepath.Join(e.home, name+".yaml")
	e.mustCapctl(c, "generate", "cluster", name, "--flavor", "in-memory", "--kubernetes-version", k8s,
		"--control-plane-machine-count", "1", "--worker-machine-count", fmt.Sprint(workers), "--target-namespace", ns,
		"--write-to", path)
	ctx := context.Background()
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	testenv.CreateFromFile(e.t, c.Client, path)
}

var (
	clusterGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
	machineGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
)

// servedClusterGVK is the Cluster kind at the version the management cluster prefers: v1beta2
// from Cluster API v1.11, v1beta1 on an older (v1beta1 contract) management cluster.
func servedClusterGVK(c *livemgmt.Cluster) schema.GroupVersionKind { return served(c, clusterGVK) }

// served is gvk (a kind, or a kind's List) at the version c prefers for its group and kind, or
// gvk itself when c does not serve the kind.
func served(c *livemgmt.Cluster, gvk schema.GroupVersionKind) schema.GroupVersionKind {
	list := strings.HasSuffix(gvk.Kind, "List")
	gk := schema.GroupKind{Group: gvk.Group, Kind: strings.TrimSuffix(gvk.Kind, "List")}
	m, err := c.Client.RESTMapper().RESTMapping(gk)
	if err != nil {
		return gvk
	}
	out := m.GroupVersionKind
	if list {
		out.Kind += "List"
	}
	return out
}

func getCluster(ctx context.Context, c *livemgmt.Cluster, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(servedClusterGVK(c))
	return u, c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

// condition returns a v1beta2 condition's status and message (of a v1beta1 object, from
// status.v1beta2.conditions, where the v1beta1 contract keeps them).
func condition(u *unstructured.Unstructured, typ string) (string, string) {
	path := []string{"status", "conditions"}
	if strings.HasSuffix(u.GetAPIVersion(), "/v1beta1") {
		path = []string{"status", "v1beta2", "conditions"}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, path...)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["message"])
		}
	}
	return "", ""
}

// waitAvailable waits until the controllers report the Cluster Available=True; when they do
// not in time it fails the test with the describe tree and the managers' last log lines.
func (e *e2e) waitAvailable(c *livemgmt.Cluster, ns, name string, timeout time.Duration) {
	e.t.Helper()
	if msg := e.awaitAvailable(c, ns, name, timeout); msg != "" {
		e.t.Fatal(msg)
	}
}

// waitAvailableE is waitAvailable for parallel goroutines: it reports with Errorf.
func (e *e2e) waitAvailableE(c *livemgmt.Cluster, ns, name string, timeout time.Duration) {
	if msg := e.awaitAvailable(c, ns, name, timeout); msg != "" {
		e.t.Error(msg)
	}
}

// awaitAvailable is the wait of waitAvailable: "" once Available, else what went wrong.
func (e *e2e) awaitAvailable(c *livemgmt.Cluster, ns, name string, timeout time.Duration) string {
	ctx := context.Background()
	start := time.Now()
	var last string
	for time.Since(start) < timeout {
		u, err := getCluster(ctx, c, ns, name)
		if err == nil {
			st, msg := condition(u, "Available")
			if st == "True" {
				e.t.Logf("Cluster %s/%s Available on %s after %s", ns, name, c.Name, time.Since(start).Round(time.Second))
				return ""
			}
			last = fmt.Sprintf("Available=%s %s", st, msg)
		} else {
			last = err.Error()
		}
		time.Sleep(2 * time.Second)
	}
	return fmt.Sprintf("Cluster %s/%s not Available on %s after %s (%s)\n%s", ns, name, c.Name, timeout, last,
		e.host.Diagnose(ctx, c, capctlBin, ns, name))
}

// waitMachinesCondition waits until every Machine of ns has condition typ True.
func (e *e2e) waitMachinesCondition(c *livemgmt.Cluster, ns, typ string, timeout time.Duration) {
	e.t.Helper()
	ctx := context.Background()
	var last string
	for start := time.Now(); time.Since(start) < timeout; time.Sleep(2 * time.Second) {
		ms, err := listMachines(ctx, c, ns)
		if err != nil {
			last = err.Error()
			continue
		}
		var waiting []string
		for i := range ms {
			if st, _ := condition(&ms[i], typ); st != "True" {
				waiting = append(waiting, ms[i].GetName()+" ("+typ+"="+st+")")
			}
		}
		if len(ms) > 0 && len(waiting) == 0 {
			return
		}
		last = strings.Join(waiting, ", ")
	}
	e.t.Fatalf("Machines of %s on %s not %s=True after %s: %s", ns, c.Name, typ, timeout, last)
}

func listMachines(ctx context.Context, c *livemgmt.Cluster, ns string) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(served(c, machineGVK.GroupVersion().WithKind("MachineList")))
	err := c.Client.List(ctx, l, client.InNamespace(ns))
	return l.Items, err
}

// parallel runs fns at once and waits for all.
func parallel(fns ...func()) {
	var wg sync.WaitGroup
	for _, f := range fns {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
}
