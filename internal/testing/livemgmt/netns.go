package livemgmt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A management cluster's network: its managers run in a Linux network namespace of its own, so
// that CAPD's fixed ports (:19000, 20000 and up for the in-memory workload API servers) cannot
// collide with another management cluster's CAPD, and every cluster runs its own CAPD.
//
// The namespace is joined to the host by a veth pair in a /30 of netnsPrefix: the host end is
// .1, the namespace end .2. The API server (on the host's loopback) calls the managers' webhooks
// at the namespace end (EndpointSlices), the stand-in kubelet probes /readyz there. The managers
// reach the API server at the same 127.0.0.1:PORT as programs on the host, through a proxy the
// harness listens with inside the namespace, so one kubeconfig works on both sides. The
// in-memory workload clusters listen on the namespace's own loopback (POD_IP=127.0.0.1), where
// that management cluster's core and control-plane managers find them. Nothing leaves loopback
// or the namespaces the harness made.

// netnsPrefix is the address block of the harness's namespaces: slot s is 10.213.s.0/30.
const netnsPrefix = "10.213."

// netnsSlots bounds how many namespaces the host runs at once (slot 0 is not used).
const netnsSlots = 250

// netnsStateDir records which process owns which slot, so a slot left by a killed program is
// found and removed by the next one. /run is a tmpfs: nothing outlives a reboot, nor do the
// namespaces.
var netnsStateDir = "/run/capctl-livemgmt"

// netNS is one management cluster's network namespace.
type netNS struct {
	name     string // ip netns name
	slot     int
	hostIf   string // veth end on the host
	hostAddr string
	addr     string // veth end in the namespace: the managers' address as the API server sees it
	ipBin    string

	mu      sync.Mutex
	proxies []net.Listener
}

var (
	netnsOnce   sync.Once
	netnsReason string // why namespaces cannot be used here ("" when they can)
	ipBin       string
)

// NetnsUnavailable says why this host cannot give management clusters their own network
// namespaces ("" when it can). LIVEMGMT_NETNS=off turns them off.
func NetnsUnavailable() string {
	netnsOnce.Do(func() { netnsReason = probeNetns() })
	return netnsReason
}

func probeNetns() string {
	if v := os.Getenv("LIVEMGMT_NETNS"); v == "off" || v == "0" || v == "false" {
		return "LIVEMGMT_NETNS=" + v
	}
	if runtime.GOOS != "linux" {
		return "network namespaces are Linux only"
	}
	if os.Geteuid() != 0 {
		return "creating network namespaces needs root"
	}
	p, err := exec.LookPath("ip")
	if err != nil {
		for _, c := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"} {
			if isFile(c) {
				p, err = c, nil
				break
			}
		}
	}
	if err != nil {
		return "the ip command (Debian's iproute2) is not installed"
	}
	ipBin = p
	// Our block must not be used by the host's own networks.
	out, err := exec.Command(ipBin, "-4", "route", "show", "to", "match", netnsPrefix+"0.0/16").CombinedOutput()
	if err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line == "" || strings.HasPrefix(line, "default") || strings.Contains(line, " dev lmh") {
				continue
			}
			return fmt.Sprintf("%s0.0/16 is routed on this host (%s)", netnsPrefix, line)
		}
	}
	// A throwaway namespace proves the kernel and the mounts allow it.
	probe := fmt.Sprintf("capctl-lm-probe-%d", os.Getpid())
	if out, err := exec.Command(ipBin, "netns", "add", probe).CombinedOutput(); err != nil {
		return fmt.Sprintf("ip netns add failed: %v: %s", err, bytes.TrimSpace(out))
	}
	_ = exec.Command(ipBin, "netns", "del", probe).Run()
	return ""
}

func (n *netNS) ip(args ...string) error {
	out, err := exec.Command(n.ipBin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// allocNetns makes a namespace in the first free slot. Slots whose owner process is gone are
// cleaned up first. A host-wide lock keeps programs that start at once from taking the same slot.
func allocNetns() (*netNS, error) {
	if why := NetnsUnavailable(); why != "" {
		return nil, errors.New(why)
	}
	if err := os.MkdirAll(netnsStateDir, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(netnsStateDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	for slot := 1; slot <= netnsSlots; slot++ {
		n := &netNS{
			name: fmt.Sprintf("capctl-lm-%d", slot), slot: slot, ipBin: ipBin,
			hostIf:   fmt.Sprintf("lmh%d", slot),
			hostAddr: fmt.Sprintf("%s%d.1", netnsPrefix, slot),
			addr:     fmt.Sprintf("%s%d.2", netnsPrefix, slot),
		}
		owner := filepath.Join(netnsStateDir, strconv.Itoa(slot))
		if b, err := os.ReadFile(owner); err == nil {
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 && processAlive(pid) {
				continue
			}
		}
		n.remove() // whatever a dead owner left
		if err := os.WriteFile(owner, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
			return nil, err
		}
		if err := n.create(); err != nil {
			n.release()
			return nil, fmt.Errorf("network namespace %s: %w", n.name, err)
		}
		return n, nil
	}
	return nil, fmt.Errorf("all %d network namespace slots of the harness are in use", netnsSlots)
}

func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM)
}

func (n *netNS) create() error {
	nsIf := fmt.Sprintf("lmn%d", n.slot)
	steps := [][]string{
		{"netns", "add", n.name},
		{"link", "add", n.hostIf, "type", "veth", "peer", "name", nsIf, "netns", n.name},
		{"addr", "add", n.hostAddr + "/30", "dev", n.hostIf},
		{"link", "set", n.hostIf, "up"},
		{"-n", n.name, "addr", "add", n.addr + "/30", "dev", nsIf},
		{"-n", n.name, "link", "set", nsIf, "up"},
		{"-n", n.name, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := n.ip(s...); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes the namespace and the host end of its veth pair, if they exist.
func (n *netNS) remove() {
	_ = exec.Command(n.ipBin, "netns", "del", n.name).Run()
	_ = exec.Command(n.ipBin, "link", "del", n.hostIf).Run()
}

// release closes the proxies, removes the namespace and frees the slot. Processes in the
// namespace must have been stopped.
func (n *netNS) release() {
	n.mu.Lock()
	for _, l := range n.proxies {
		l.Close()
	}
	n.proxies = nil
	n.mu.Unlock()
	n.remove()
	_ = os.Remove(filepath.Join(netnsStateDir, strconv.Itoa(n.slot)))
}

// command is bin args... run inside the namespace.
func (n *netNS) command(bin string, args []string) (string, []string) {
	return n.ipBin, append([]string{"netns", "exec", n.name, bin}, args...)
}

// listen opens a TCP listener inside the namespace. A socket belongs to the namespace of the
// thread that made it, so this thread joins the namespace for the call and then returns; if it
// cannot return, it stays locked and dies with the goroutine rather than serve anything else.
func (n *netNS) listen(addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open(filepath.Join("/run/netns", n.name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("joining %s: %w", n.name, err)}
			return
		}
		l, lerr := net.Listen("tcp", addr)
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			if l != nil {
				l.Close()
			}
			ch <- result{err: fmt.Errorf("leaving %s: %w", n.name, err)} // thread stays locked: it exits with us
			return
		}
		runtime.UnlockOSThread()
		ch <- result{l: l, err: lerr}
	}()
	r := <-ch
	return r.l, r.err
}

// proxyLoopback makes hostAddr (a 127.0.0.1:PORT on the host) answer at the same address inside
// the namespace, forwarding each connection to the host's. TLS passes through untouched.
func (n *netNS) proxyLoopback(hostAddr string) error {
	l, err := n.listen(hostAddr)
	if err != nil {
		return fmt.Errorf("proxy for %s in %s: %w", hostAddr, n.name, err)
	}
	n.mu.Lock()
	n.proxies = append(n.proxies, l)
	n.mu.Unlock()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.DialTimeout("tcp", hostAddr, 10*time.Second)
				if err != nil {
					return
				}
				defer out.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(out, in); closeWrite(out); done <- struct{}{} }()
				go func() { _, _ = io.Copy(in, out); closeWrite(in); done <- struct{}{} }()
				<-done
				<-done
			}()
		}
	}()
	return nil
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}
