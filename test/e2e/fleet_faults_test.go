package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/pkg/fleetupgrade"
)

// TestFleetFaultsLive: `capctl upgrade apply --kubernetes-version` on a live management cluster
// when things go wrong. Two small fleets of in-memory ClusterClass clusters, each in two waves
// (one namespace per fleet, so each part has a fleet of its own to upgrade one minor up):
//   - resume after Ctrl-C: the real process gets SIGINT right after it reports its first patch;
//     it stops with the interrupted report and says how to continue, nothing past that patch is
//     written, and the same command again finishes every cluster without patching anything twice
//     while the controllers replace every Machine;
//   - a cluster that cannot finish: with the infrastructure manager (CAPD) stopped after the
//     clusters are Available, the run fails at the first wave's cluster with the report (cluster,
//     step, pending reasons, describe lines), the next wave is left untouched, and once CAPD is
//     back the same command finishes.
//
// The seconds measured are logged (search the output for "measured:").
func TestFleetFaultsLive(t *testing.T) {
	const target = "v1.35.0"
	e := start(t, 1)
	mgmt := e.clusters[0]
	e.initAt(mgmt, "v1.14.0")
	if t.Failed() {
		t.FailNow()
	}
	fleet := []struct {
		ns, name, wave string
		workers        int
	}{
		{"faults-a", "fa-1", "1", 1},
		{"faults-a", "fa-2", "2", 0},
		{"faults-b", "fb-1", "1", 0},
		{"faults-b", "fb-2", "2", 0},
	}
	for _, c := range fleet {
		e.createCluster(mgmt, c.ns, c.name, k8sVersion, c.workers)
	}
	for _, c := range fleet {
		e.waitAvailable(mgmt, c.ns, c.name, 6*time.Minute)
		setWave(t, mgmt, c.ns, c.name, c.wave)
	}
	// Subtests get an e2e of their own so that capctl's helpers fail the subtest, not its parent.
	sub := func(t *testing.T) *e2e { s := *e; s.t = t; return &s }
	t.Run("resume after Ctrl-C", func(t *testing.T) { testFleetResumeLive(sub(t), mgmt, "faults-a", target) })
	t.Run("infrastructure manager stopped", func(t *testing.T) { testFleetStuckLive(sub(t), mgmt, "faults-b", target) })
}

func testFleetResumeLive(e *e2e, mgmt *livemgmt.Cluster, ns, target string) {
	t := e.t
	before := machineVersions(t, mgmt, ns)
	if len(before) != 3 {
		t.Fatalf("want 3 Machines in %s (fa-1: control plane + worker, fa-2: control plane), got %v", ns, before)
	}
	secondWave := specState(t, mgmt, ns, "fa-2")
	args := []string{"upgrade", "apply", "--kubernetes-version", target, "-n", ns, "--timeout", "8m", "-o", "json"}

	run := e.startCapctl(mgmt, args...)
	firstPatch := "set Cluster fa-1 spec.topology.version to " + target
	if !run.waitOutput(firstPatch, 3*time.Minute) {
		_, stderr, err := run.wait()
		t.Fatalf("no %q in the progress (exit %v):\n%s", firstPatch, err, stderr)
	}
	interruptAt := time.Now()
	if err := run.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run.wait()
	t.Logf("measured: the interrupted run stopped %.1fs after SIGINT (%.1fs after it started)",
		time.Since(interruptAt).Seconds(), time.Since(run.started).Seconds())
	if code := exitCode(err); code != 1 {
		t.Errorf("interrupted run: exit %d, want 1", code)
	}
	if want := "the fleet upgrade was interrupted after the patch under way: run the same command again to continue from the clusters' state"; !strings.Contains(stderr, want) {
		t.Errorf("the interrupted run does not say how to continue (%q):\n%s", want, stderr)
	}
	rep := parseFleetReport(t, stdout)
	if !rep.Interrupted || rep.Failure != nil {
		t.Errorf("interrupted report: %+v", rep)
	}
	res := fleetResults(rep)
	if r := res[ns+"/fa-1"]; r.Result != fleetupgrade.ResultInterrupted || len(r.Steps) != 1 ||
		fmt.Sprint(r.Steps[0].Patched) != "[Cluster fa-1 spec.topology.version]" || r.Steps[0].Done {
		t.Errorf("fa-1 in the interrupted report: %+v", r)
	}
	if r := res[ns+"/fa-2"]; r.Result != fleetupgrade.ResultNotStarted || len(r.Steps) != 0 {
		t.Errorf("fa-2 in the interrupted report: %+v", r)
	}
	// Nothing beyond the step under way: fa-1 asks the target, the second wave is as it was.
	if v := topologyVersion(t, mgmt, ns, "fa-1"); v != target {
		t.Errorf("fa-1 spec.topology.version is %s after the interrupt, want %s", v, target)
	}
	if now := specState(t, mgmt, ns, "fa-2"); fmt.Sprint(now) != fmt.Sprint(secondWave) {
		t.Errorf("the second wave was touched by the interrupted run:\nbefore %v\nafter  %v", secondWave, now)
	}

	// The same command again continues from the clusters' state.
	res = e.applyOK(mgmt, "the resumed run", args...)
	checkResumed(t, res[ns+"/fa-1"], target)
	checkPatchedOnce(t, res[ns+"/fa-2"], target)
	checkReplaced(t, mgmt, ns, before, target)
}

// applyOK runs a fleet apply that must succeed and returns its clusters' reports.
func (e *e2e) applyOK(mgmt *livemgmt.Cluster, what string, args ...string) map[string]fleetupgrade.FleetClusterReport {
	t := e.t
	t.Helper()
	run := e.startCapctl(mgmt, args...)
	stdout, stderr, err := run.wait()
	t.Logf("measured: %s took %.1fs", what, time.Since(run.started).Seconds())
	if err != nil {
		t.Fatalf("%s: exit %d\n%s\n%s", what, exitCode(err), stderr, stdout)
	}
	rep := parseFleetReport(t, stdout)
	logFleetReport(t, rep)
	return fleetResults(rep)
}

// checkResumed: the cluster a stopped run had patched is finished by the re-run, which reports
// the rollout it found under way as its one step, patching nothing again.
func checkResumed(t *testing.T, r fleetupgrade.FleetClusterReport, target string) {
	t.Helper()
	if r.Result != fleetupgrade.ResultUpgraded || len(r.Steps) != 1 || r.Steps[0].Component != fleetupgrade.ControlPlane ||
		r.Steps[0].Version != target || len(r.Steps[0].Patched) != 0 || !r.Steps[0].Done {
		t.Errorf("%s/%s in the re-run: %+v (want Upgraded, one step: the control plane's rollout to %s under way, nothing patched)", r.Namespace, r.Name, r, target)
	}
}

// checkPatchedOnce: a cluster the stopped run left untouched gets its one patch from the re-run.
func checkPatchedOnce(t *testing.T, r fleetupgrade.FleetClusterReport, target string) {
	t.Helper()
	if r.Result != fleetupgrade.ResultUpgraded || len(r.Steps) != 1 || r.Steps[0].Version != target ||
		fmt.Sprint(r.Steps[0].Patched) != "[Cluster "+r.Name+" spec.topology.version]" || !r.Steps[0].Done {
		t.Errorf("%s/%s in the re-run: %+v (want Upgraded, its spec.topology.version patched once)", r.Namespace, r.Name, r)
	}
}

func testFleetStuckLive(e *e2e, mgmt *livemgmt.Cluster, ns, target string) {
	t := e.t
	ctx := context.Background()
	for _, name := range []string{"fb-1", "fb-2"} {
		e.waitAvailable(mgmt, ns, name, 5*time.Minute)
	}
	before := machineVersions(t, mgmt, ns)
	secondWave := specState(t, mgmt, ns, "fb-2")

	scaleCAPD(t, mgmt, 0)
	stoppedAt := time.Now()
	waitFor(t, 2*time.Minute, "the CAPD pod to go", func() bool {
		pods := &corev1.PodList{}
		return mgmt.Client.List(ctx, pods, client.InNamespace("capd-system")) == nil && len(pods.Items) == 0
	})
	t.Logf("measured: CAPD stopped %.1fs after its Deployment was scaled to 0", time.Since(stoppedAt).Seconds())
	restored := false
	defer func() {
		if !restored {
			scaleCAPD(t, mgmt, 1)
		}
	}()

	const timeout = 90 * time.Second
	args := []string{"upgrade", "apply", "--kubernetes-version", target, "-n", ns, "--timeout", timeout.String(), "-o", "json"}
	run := e.startCapctl(mgmt, args...)
	stdout, stderr, err := run.wait()
	t.Logf("measured: the run with CAPD stopped failed after %.1fs (--timeout %s)", time.Since(run.started).Seconds(), timeout)
	if code := exitCode(err); code != 1 {
		t.Errorf("with CAPD stopped: exit %d, want 1", code)
	}
	rep := parseFleetReport(t, stdout)
	logFleetReport(t, rep)
	f := rep.Failure
	if f == nil {
		t.Fatalf("no failure in the report:\n%s", stdout)
	}
	// What really happens (seen live): the patch is accepted (the Cluster's webhooks are the
	// core's, which runs) and the topology controller passes the version to the control plane.
	// But CAPD's in-memory backend also serves the workload clusters' API servers and etcd, so
	// with it down the kubeadm control plane cannot read etcd ("Failed to get etcd members"),
	// never starts the rollout (it has not even observed its new spec) and the Cluster's
	// RemoteConnectionProbe fails: the step cannot finish and the cluster's --timeout ends it.
	wantStep := "control plane " + target
	if f.Namespace != ns || f.Name != "fb-1" || f.Step != wantStep || !strings.HasPrefix(f.Reason, "timed out after "+timeout.String()+" waiting for "+wantStep) {
		t.Errorf("failure: cluster %s/%s step %q reason %q; want %s/fb-1, step %q, a timeout", f.Namespace, f.Name, f.Step, f.Reason, ns, wantStep)
	}
	for _, want := range []string{"reports version " + k8sVersion + ", wants " + target, "runs " + k8sVersion + ", wants " + target} {
		if !anyContains(f.Pending, want) {
			t.Errorf("the pending reasons do not say %q: %q", want, f.Pending)
		}
	}
	t.Logf("pending when it stopped:\n  %s", strings.Join(f.Pending, "\n  "))
	if len(f.Describe) < 2 || !anyContains(f.Describe, "fb-1") {
		t.Errorf("the failure's describe lines do not show fb-1:\n%s", strings.Join(f.Describe, "\n"))
	}
	if want := fmt.Sprintf("the fleet upgrade stopped at cluster %s/fb-1, step %s: timed out", ns, wantStep); !strings.Contains(stderr, want) {
		t.Errorf("the error does not name the cluster and step (%q):\n%s", want, stderr)
	}
	res := fleetResults(rep)
	if r := res[ns+"/fb-1"]; r.Result != fleetupgrade.ResultFailed || len(r.Steps) != 1 || fmt.Sprint(r.Steps[0].Patched) != "[Cluster fb-1 spec.topology.version]" {
		t.Errorf("fb-1: %+v", r)
	}
	if r := res[ns+"/fb-2"]; r.Result != fleetupgrade.ResultNotStarted {
		t.Errorf("fb-2 (the next wave): %+v", r)
	}
	if now := specState(t, mgmt, ns, "fb-2"); fmt.Sprint(now) != fmt.Sprint(secondWave) {
		t.Errorf("the next wave was touched:\nbefore %v\nafter  %v", secondWave, now)
	}
	// The text report a user sees, in the test log.
	_, _ = e.capctl(mgmt, "describe", "cluster", "fb-1", "-n", ns)

	scaleCAPD(t, mgmt, 1)
	restored = true
	backAt := time.Now()
	waitFor(t, 3*time.Minute, "the CAPD pod to be Ready", func() bool { return capdReady(ctx, mgmt) })
	t.Logf("measured: CAPD Ready again %.1fs after its Deployment was scaled to 1", time.Since(backAt).Seconds())

	res = e.applyOK(mgmt, "the run after CAPD came back", "upgrade", "apply", "--kubernetes-version", target, "-n", ns, "--timeout", "8m", "-o", "json")
	checkResumed(t, res[ns+"/fb-1"], target)
	checkPatchedOnce(t, res[ns+"/fb-2"], target)
	checkReplaced(t, mgmt, ns, before, target)
}

// liveCapctl is a capctl process the test drives: stdout kept whole (the -o json report),
// stderr (the progress lines) readable while it runs.
type liveCapctl struct {
	cmd     *exec.Cmd
	stdout  bytes.Buffer
	mu      sync.Mutex
	stderr  strings.Builder
	done    chan struct{}
	started time.Time
	t       *testing.T
	args    []string
}

func (e *e2e) startCapctl(c *livemgmt.Cluster, args ...string) *liveCapctl {
	e.t.Helper()
	args = append(args, "--config", e.config)
	if c != nil {
		args = append(args, "--kubeconfig", c.Kubeconfig)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	e.t.Cleanup(cancel)
	r := &liveCapctl{cmd: e.command(ctx, c, args...), done: make(chan struct{}), t: e.t, args: args}
	r.cmd.Stdout = &r.stdout
	pipe, err := r.cmd.StderrPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	r.started = time.Now()
	if err := r.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.stderr.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
		}
	}()
	return r
}

// waitOutput waits until stderr has a line containing s; false when the process ended first
// or the time ran out.
func (r *liveCapctl) waitOutput(s string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		found := strings.Contains(r.stderr.String(), s)
		r.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-r.done:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// wait waits for the process to end and returns its stdout, stderr and exit error.
func (r *liveCapctl) wait() (string, string, error) {
	<-r.done
	err := r.cmd.Wait()
	r.mu.Lock()
	stderr := r.stderr.String()
	r.mu.Unlock()
	r.t.Logf("$ capctl %s (%s, exit %d)\n--- stderr\n%s--- stdout\n%s", strings.Join(r.args, " "),
		time.Since(r.started).Round(100*time.Millisecond), exitCode(err), stderr, r.stdout.String())
	return r.stdout.String(), stderr, err
}

func parseFleetReport(t *testing.T, stdout string) *fleetupgrade.FleetApplyReport {
	t.Helper()
	var rep fleetupgrade.FleetApplyReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("the -o json report: %v\n%s", err, stdout)
	}
	return &rep
}

func fleetResults(rep *fleetupgrade.FleetApplyReport) map[string]fleetupgrade.FleetClusterReport {
	out := map[string]fleetupgrade.FleetClusterReport{}
	for _, w := range rep.Waves {
		for _, c := range w.Clusters {
			out[c.Namespace+"/"+c.Name] = c
		}
	}
	return out
}

func logFleetReport(t *testing.T, rep *fleetupgrade.FleetApplyReport) {
	t.Helper()
	for _, w := range rep.Waves {
		t.Logf("measured: wave %s: %.1fs", w.Wave, w.Seconds)
		for _, c := range w.Clusters {
			t.Logf("measured:   cluster %s/%s: %s in %.1fs, steps %+v", c.Namespace, c.Name, c.Result, c.Seconds, c.Steps)
		}
	}
}

// checkReplaced: every Machine of ns runs target and none of those before is left.
func checkReplaced(t *testing.T, c *livemgmt.Cluster, ns string, before map[string]string, target string) {
	t.Helper()
	after := machineVersions(t, c, ns)
	for name, v := range after {
		if v != target {
			t.Errorf("Machine %s runs %s, want %s", name, v, target)
		}
		if _, old := before[name]; old {
			t.Errorf("Machine %s was not replaced", name)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d Machines before, %d after: %v", len(before), len(after), after)
	}
}

func setWave(t *testing.T, c *livemgmt.Cluster, ns, name, wave string) {
	t.Helper()
	u, err := getCluster(context.Background(), c, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{fleetupgrade.PlainWaveLabel: wave}}})
	if err := c.Client.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, b)); err != nil {
		t.Fatal(err)
	}
}

func topologyVersion(t *testing.T, c *livemgmt.Cluster, ns, name string) string {
	t.Helper()
	u, err := getCluster(context.Background(), c, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := unstructured.NestedString(u.Object, "spec", "topology", "version")
	return v
}

// specState is what an upgrade would change of a cluster: the spec generation and version of
// the Cluster, its control plane and its MachineDeployments. (Not resourceVersion: the
// controllers keep writing status, most of all while CAPD is down.)
func specState(t *testing.T, c *livemgmt.Cluster, ns, name string) []string {
	t.Helper()
	ctx := context.Background()
	cl, err := getCluster(ctx, c, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{fmt.Sprintf("Cluster %s generation %d version %s", name, cl.GetGeneration(), topologyVersion(t, c, ns, name))}
	for _, k := range []struct {
		gvk  schema.GroupVersionKind
		path []string
	}{
		{schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmControlPlaneList"}, []string{"spec", "version"}},
		{schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineDeploymentList"}, []string{"spec", "template", "spec", "version"}},
	} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(k.gvk)
		if err := c.Client.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{"cluster.x-k8s.io/cluster-name": name}); err != nil {
			t.Fatal(err)
		}
		for _, u := range l.Items {
			v, _, _ := unstructured.NestedString(u.Object, k.path...)
			out = append(out, fmt.Sprintf("%s %s generation %d version %s", u.GetKind(), u.GetName(), u.GetGeneration(), v))
		}
	}
	sort.Strings(out[1:])
	return out
}

// scaleCAPD scales the infrastructure manager's Deployment: the harness's kubelet then stops or
// starts its process, as a kubelet would its pod.
func scaleCAPD(t *testing.T, c *livemgmt.Cluster, n int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	ctx := context.Background()
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "capd-system", Name: "capd-controller-manager"}, d); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": n}})
	if err := c.Client.Patch(ctx, d, client.RawPatch(types.MergePatchType, b)); err != nil {
		t.Fatal(err)
	}
}

func capdReady(ctx context.Context, c *livemgmt.Cluster) bool {
	pods := &corev1.PodList{}
	if c.Client.List(ctx, pods, client.InNamespace("capd-system")) != nil {
		return false
	}
	for _, p := range pods.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				return true
			}
		}
	}
	return false
}

func anyContains(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
