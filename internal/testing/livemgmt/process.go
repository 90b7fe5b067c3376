package livemgmt

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one host process the harness started (kube-controller-manager or a manager).
type process struct {
	name string
	cmd  *exec.Cmd
	log  string // path of its combined stdout/stderr
	done chan struct{}
	err  error // exit error, valid after done
}

// startProcess runs bin with args and env, appending its output to logPath. The process gets its
// own process group (so a terminal's Ctrl-C reaches the harness first and the harness stops it in
// order) and is killed by the kernel if the harness dies without cleaning up.
func startProcess(name, bin string, args, env []string, logPath string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "=== %s %s %s\n", time.Now().UTC().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *process) stop(grace time.Duration) {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exitReason says how the process ended and points at its log.
func (p *process) exitReason() string {
	code := -1
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		code = ee.ExitCode()
	}
	msg := fmt.Sprintf("%s exited (code %d); log: %s", p.name, code, p.log)
	if tail := lastLines(p.log, 3); tail != "" {
		msg += "\n" + tail
	}
	return msg
}

// portInUse reports whether the process's log says a port it wanted was taken.
func (p *process) portInUse() bool {
	return strings.Contains(lastLines(p.log, 30), "address already in use")
}

// waitHTTP polls url until it answers 200, the process exits, or ctx ends.
func (p *process) waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// Our own process on loopback, serving with a self-signed certificate it made itself.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	}}
	for {
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return errors.New(p.exitReason())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s after %s; log: %s", p.name, url, timeout, p.log)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// lastLines returns the last n lines of a file ("" if unreadable).
func lastLines(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, _ := f.Stat()
	const max = 256 << 10
	if st != nil && st.Size() > max {
		_, _ = f.Seek(st.Size()-max, 0)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// ports hands out free TCP ports on this host, never the same twice in one process, and never
// in CAPD's fixed ranges (19000, 20000 and up for its in-memory workload API servers).
type ports struct {
	mu   sync.Mutex
	used map[int]bool
}

var hostPorts = &ports{used: map[int]bool{}}

func (p *ports) get() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 200 {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p.used[port] || port == 19000 || (port >= 20000 && port < 21000) {
			continue
		}
		p.used[port] = true
		return port, nil
	}
	return 0, errors.New("no free TCP port found")
}
