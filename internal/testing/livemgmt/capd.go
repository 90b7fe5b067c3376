package livemgmt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/Masterminds/semver/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// capdSlot is the host's one CAPD process, on a shared network only (with a network namespace
// per cluster each cluster's CAPD pod runs as its other managers do). CAPD binds :19000 and 20000+ on every interface
// (not configurable), so one runs per machine: it reconciles the "home" management cluster (the
// one its Cluster objects live on) and serves the webhooks of every management cluster of the
// host (their capd-webhook-service EndpointSlices point at it). Other clusters' CAPD pods are
// reported running while it runs. MoveCAPD changes the home after a move.
type capdSlot struct {
	home   *Cluster
	owner  *Cluster
	podUID types.UID
	proc   *process
	ports  map[string]int
	ready  atomic.Bool
	start  time.Time
	ver    string
	lock   *os.File
	note   string // why it is not running
}

// lockPath is the host-wide lock for CAPD's fixed ports, shared by every harness on the machine.
func lockPath() string {
	return filepath.Join(filepath.Dir(ManagersDir()), "capd.lock")
}

// claimCAPD starts CAPD for this pod when the host has none running and the pod's cluster is
// CAPD's home (the first cluster that asks, unless MoveCAPD chose one).
func (h *Host) claimCAPD(ctx context.Context, k *kubelet, p *corev1.Pod, ct *container) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &h.capd
	if s.proc != nil && s.proc.exited() {
		ct.lastExit = s.proc.exitReason()
		k.logf("CAPD: %s", ct.lastExit)
		ct.restarts++
		h.releaseLocked()
		ct.next = time.Now().Add(time.Duration(1<<min(ct.restarts, 6)) * time.Second)
	}
	if s.proc != nil || h.stopped {
		return
	}
	if s.home == nil {
		s.home = k.c
	}
	if s.home != k.c || time.Now().Before(ct.next) {
		return
	}
	if s.lock == nil {
		f, err := os.OpenFile(lockPath(), os.O_CREATE|os.O_RDWR, 0o600)
		if err == nil {
			if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				f.Close()
			}
		}
		if err != nil {
			s.note = fmt.Sprintf("another program on this host runs CAPD (it binds fixed ports; lock %s): waiting for it to stop", lockPath())
			return
		}
		s.lock = f
	}
	proc, ports, err := k.startManager(ctx, p, ct, nil)
	if err != nil {
		s.note = err.Error()
		return
	}
	s.owner, s.podUID, s.proc, s.ports, s.start, s.ver, s.note = k.c, p.UID, proc, ports, time.Now(), ct.binVer, ""
	s.ready.Store(false)
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports["healthz"])
	go func() {
		if proc.waitHTTP(context.Background(), url, 3*time.Minute) == nil {
			s.ready.Store(true)
		}
	}()
}

// capdState is the state of a CAPD pod: the host's CAPD process's.
func (h *Host) capdState(ct *container) (bool, bool, time.Time, int, [2]string, map[string]int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &h.capd
	if s.proc != nil && !s.proc.exited() {
		return true, s.ready.Load(), s.start, ct.restarts, [2]string{}, s.ports
	}
	why := [2]string{"ContainerCreating", s.note}
	if ct.lastExit != "" {
		why = [2]string{"CrashLoopBackOff", ct.lastExit}
	}
	if s.note == "" && s.home != nil && ct.lastExit == "" {
		why[1] = "waiting for the host's CAPD (it runs against management cluster " + s.home.Name + ")"
	}
	return false, false, time.Time{}, ct.restarts, why, nil
}

// releaseCAPD stops CAPD if it runs for this pod (the pod was deleted).
func (h *Host) releaseCAPD(c *Cluster, uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.capd.owner == c && h.capd.podUID == uid {
		h.releaseLocked()
	}
}

func (h *Host) releaseLocked() {
	s := &h.capd
	if s.proc != nil {
		s.proc.stop(15 * time.Second)
	}
	s.proc, s.owner, s.podUID, s.ports = nil, nil, "", nil
	s.ready.Store(false)
	if s.lock != nil {
		_ = syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
		s.lock.Close()
		s.lock = nil
	}
}

func (h *Host) stopCAPD() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.releaseLocked()
}

// MoveCAPD is what the harness does after a move to c: c's CAPD takes over the moved clusters'
// in-memory infrastructure. With a namespace per cluster the source keeps its CAPD, and c's own
// CAPD adopts the moved clusters: from v1.14 it re-creates a workload cluster's listener on the
// DevCluster's endpoint port as it reconciles, so it is left running; before v1.14 it restores
// listeners only when it starts, so it is restarted (its pod is deleted and its ReplicaSet makes
// a new one). Restarting a v1.14 CAPD would kill it in the middle of that adoption: the core
// controller may already have read the workload cluster from the first in-memory API server,
// and the second one's fresh store then shows it the moved Nodes as deleted (a CI run saw the
// MachineHealthCheck replace a moved worker that way). On a shared network the host's one CAPD
// stops and starts again against c. Either way it waits until CAPD is ready.
func (h *Host) MoveCAPD(ctx context.Context, c *Cluster) error {
	if c.ns != nil {
		adopts, ver, err := c.capdAdoptsWithoutRestart(ctx)
		if err != nil {
			return err
		}
		if adopts {
			if err := c.checkWorkloadPorts(ctx); err != nil {
				return err
			}
			h.logf("CAPD %s on management cluster %s adopts the moved clusters as it reconciles: not restarted", ver, c.Name)
			return c.waitCAPDPod(ctx, nil, 3*time.Minute)
		}
		return c.RestartCAPD(ctx, 3*time.Minute)
	}
	h.mu.Lock()
	h.capd.home = c
	h.releaseLocked()
	h.mu.Unlock()
	h.logf("CAPD restarting against management cluster %s", c.Name)
	return h.WaitCAPD(ctx, c, 3*time.Minute)
}

// listenerOnEndpointPort is the first CAPD whose DevCluster reconcile re-creates a workload
// cluster's listener on the port of the DevCluster's endpoint (earlier ones take a free port).
var listenerOnEndpointPort = semver.MustParse("v1.14.0")

// capdAdoptsWithoutRestart says whether every CAPD pod of c runs a version that re-creates moved
// listeners by reconciling, and which version runs.
func (c *Cluster) capdAdoptsWithoutRestart(ctx context.Context) (bool, string, error) {
	pods, err := c.capdPods(ctx)
	if err != nil {
		return false, "", err
	}
	if len(pods) == 0 {
		return false, "", fmt.Errorf("management cluster %s runs no CAPD pod to adopt the moved clusters", c.Name)
	}
	var ver string
	for _, p := range pods {
		for _, ct := range p.Spec.Containers {
			name, tag := parseImage(ct.Image)
			if imageLabels[name] != LabelDocker {
				continue
			}
			v, err := semver.NewVersion(tag)
			if err != nil || v.LessThan(listenerOnEndpointPort) {
				return false, tag, nil
			}
			ver = tag
		}
	}
	return true, ver, nil
}

// WaitCAPD waits until CAPD runs against c and is ready.
func (h *Host) WaitCAPD(ctx context.Context, c *Cluster, timeout time.Duration) error {
	if c.ns != nil {
		return c.waitCAPDPod(ctx, nil, timeout)
	}
	deadline := time.Now().Add(timeout)
	for {
		h.mu.Lock()
		ok := h.capd.owner == c && h.capd.proc != nil && h.capd.ready.Load()
		note := h.capd.note
		h.mu.Unlock()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CAPD not ready on management cluster %s after %s: %s", c.Name, timeout, note)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// RestartCAPD restarts c's CAPD pods, as `kubectl rollout restart` would, and waits for the new
// one to be ready. It first checks that the in-memory clusters c holds can all be restored:
// every CAPD advertises its workload API servers at 127.0.0.1 and numbers their ports from
// 20000, so two clusters created on different management clusters can hold the same port, and
// CAPD then refuses to restore either (a move's target must not already hold the port of a
// cluster moved to it).
func (c *Cluster) RestartCAPD(ctx context.Context, timeout time.Duration) error {
	if err := c.checkWorkloadPorts(ctx); err != nil {
		return err
	}
	pods, err := c.capdPods(ctx)
	if err != nil {
		return err
	}
	old := map[types.UID]bool{}
	for i := range pods {
		old[pods[i].UID] = true
		if err := c.Client.Delete(ctx, &pods[i]); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("restarting CAPD on %s: %w", c.Name, err)
		}
	}
	c.host.logf("CAPD restarting on management cluster %s", c.Name)
	return c.waitCAPDPod(ctx, old, timeout)
}

// capdPods are the pods that run CAPD's manager on c.
func (c *Cluster) capdPods(ctx context.Context) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := c.Client.List(ctx, pods); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		for _, ct := range p.Spec.Containers {
			if name, _ := parseImage(ct.Image); imageLabels[name] == LabelDocker {
				out = append(out, p)
				break
			}
		}
	}
	return out, nil
}

// waitCAPDPod waits until a CAPD pod of c that is not one of old is Ready.
func (c *Cluster) waitCAPDPod(ctx context.Context, old map[types.UID]bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "no CAPD pod"
	for {
		pods, err := c.capdPods(ctx)
		if err != nil {
			last = err.Error()
		}
		for _, p := range pods {
			if old[p.UID] || p.DeletionTimestamp != nil {
				continue
			}
			last = fmt.Sprintf("pod %s/%s %s", p.Namespace, p.Name, p.Status.Phase)
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return nil
				}
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Waiting != nil {
					last += ": " + cs.State.Waiting.Reason + " " + cs.State.Waiting.Message
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CAPD not ready on management cluster %s after %s: %s", c.Name, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// checkWorkloadPorts refuses when two in-memory DevClusters of c advertise the same endpoint.
func (c *Cluster) checkWorkloadPorts(ctx context.Context) error {
	m, err := c.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: "infrastructure.cluster.x-k8s.io", Kind: "DevCluster"})
	if err != nil {
		return nil // CAPD's CRDs are not installed: nothing to restore
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind("DevClusterList"))
	if err := c.Client.List(ctx, list); err != nil {
		return fmt.Errorf("listing DevClusters on %s: %w", c.Name, err)
	}
	byEndpoint := map[string][]string{}
	for _, dc := range list.Items {
		if _, ok, _ := unstructured.NestedMap(dc.Object, "spec", "backend", "inMemory"); !ok {
			continue
		}
		host, _, _ := unstructured.NestedString(dc.Object, "spec", "controlPlaneEndpoint", "host")
		port, _, _ := unstructured.NestedInt64(dc.Object, "spec", "controlPlaneEndpoint", "port")
		if host == "" {
			continue
		}
		ep := fmt.Sprintf("%s:%d", host, port)
		byEndpoint[ep] = append(byEndpoint[ep], dc.GetNamespace()+"/"+dc.GetName())
	}
	var clashes []string
	for ep, names := range byEndpoint {
		if len(names) > 1 {
			sort.Strings(names)
			clashes = append(clashes, fmt.Sprintf("%s (%s)", ep, strings.Join(names, ", ")))
		}
	}
	if len(clashes) > 0 {
		sort.Strings(clashes)
		return fmt.Errorf("management cluster %s holds in-memory clusters that advertise the same workload endpoint, which CAPD cannot restore: %s; "+
			"create the target's own clusters after the move, or move clusters created after the target's", c.Name, strings.Join(clashes, "; "))
	}
	return nil
}
