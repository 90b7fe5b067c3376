package livemgmt

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// TestNetnsIsolatesPortsAndCleansUp: two namespaces each get a listener on the same fixed
// port (as two CAPDs bind :19000), a process started in one sees its own loopback, a host
// address proxied into a namespace answers there at the same address, and releasing removes
// the namespace and its veth pair.
func TestNetnsIsolatesPortsAndCleansUp(t *testing.T) {
	testenv.SkipShort(t, "live test: creates network namespaces", "e2e")
	if why := NetnsUnavailable(); why != "" {
		// Under CI=true (root, iproute2) a skip would hide that the harness fell back.
		testenv.Require(t, "network namespaces ("+why+")", "", false)
	}
	a, err := allocNetns()
	if err != nil {
		t.Fatal(err)
	}
	defer a.release()
	b, err := allocNetns()
	if err != nil {
		t.Fatal(err)
	}
	defer b.release()
	if a.name == b.name || a.addr == b.addr {
		t.Fatalf("two allocations got the same namespace: %s %s", a.name, b.name)
	}
	for _, n := range []*netNS{a, b} {
		l, err := n.listen(":19000")
		if err != nil {
			t.Fatalf("%s: listening on the fixed port: %v", n.name, err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte(n.name + "\n"))
				c.Close()
			}
		}()
	}
	// From the host each namespace answers at its own veth address.
	for _, n := range []*netNS{a, b} {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(n.addr, "19000"), 5*time.Second)
		if err != nil {
			t.Fatalf("dialing %s from the host: %v", n.addr, err)
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if strings.TrimSpace(line) != n.name {
			t.Errorf("%s:19000 answered %q, want %q", n.addr, line, n.name)
		}
	}
	// A host loopback address proxied into a namespace answers there.
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hl.Close()
	go func() {
		for {
			c, err := hl.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("host\n"))
			c.Close()
		}
	}()
	if err := a.proxyLoopback(hl.Addr().String()); err != nil {
		t.Fatal(err)
	}
	probe := func(n *netNS, addr string) string {
		bin, args := n.command("/bin/bash", []string{"-c", "exec 3<>/dev/tcp/" + strings.Replace(addr, ":", "/", 1) + " && head -1 <&3"})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	if got := probe(a, hl.Addr().String()); got != "host" {
		t.Errorf("the host's %s from inside %s: %q, want host", hl.Addr(), a.name, got)
	}
	if got := probe(b, "127.0.0.1:19000"); got != b.name {
		t.Errorf("127.0.0.1:19000 from a process in %s: %q, want %s", b.name, got, b.name)
	}
	a.release()
	b.release()
	out, _ := exec.Command(ipBin, "netns", "list").CombinedOutput()
	links, _ := exec.Command(ipBin, "-br", "link").CombinedOutput()
	for _, n := range []*netNS{a, b} {
		if strings.Contains(string(out), n.name+" ") || strings.Contains(string(out), n.name+"\n") {
			t.Errorf("namespace %s left after release:\n%s", n.name, out)
		}
		if strings.Contains(string(links), n.hostIf+"@") || strings.Contains(string(links), n.hostIf+" ") {
			t.Errorf("veth %s left after release:\n%s", n.hostIf, links)
		}
	}
}
