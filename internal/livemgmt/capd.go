package livemgmt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// capdSlot is the host's one CAPD process. CAPD binds :19000 and 20000+ on every interface
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

// MoveCAPD makes c CAPD's home: CAPD stops and starts again against c (from c's CAPD pod), as a
// move's target takes over the infrastructure. It waits until CAPD is ready again.
func (h *Host) MoveCAPD(ctx context.Context, c *Cluster) error {
	h.mu.Lock()
	h.capd.home = c
	h.releaseLocked()
	h.mu.Unlock()
	h.logf("CAPD restarting against management cluster %s", c.Name)
	return h.WaitCAPD(ctx, c, 3*time.Minute)
}

// WaitCAPD waits until CAPD runs against c and is ready.
func (h *Host) WaitCAPD(ctx context.Context, c *Cluster, timeout time.Duration) error {
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
