package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ServedRequests is the API server's own count of the requests it has served
// (apiserver_request_total), so that capctl and another tool run against the server are counted
// alike. Reading the metrics is itself one request.
func (e *Env) ServedRequests(tb testing.TB) int64 {
	tb.Helper()
	n, _ := e.serverMetrics(tb)
	return n
}

// serverMetrics reads the API server's served-request count and the CPU seconds its process has
// used (process_cpu_seconds_total; etcd, a process of its own, is not in it).
func (e *Env) serverMetrics(tb testing.TB) (requests int64, cpuSeconds float64) {
	tb.Helper()
	raw, err := e.Client.Discovery.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		tb.Fatalf("reading the API server's metrics: %v", err)
	}
	var total float64
	for _, line := range strings.Split(string(raw), "\n") {
		request := strings.HasPrefix(line, "apiserver_request_total{")
		if !request && !strings.HasPrefix(line, "process_cpu_seconds_total ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		if request {
			total += v
		} else {
			cpuSeconds = v
		}
	}
	return int64(total), cpuSeconds
}

// ServersCPU is the CPU seconds the API servers of envs have used so far, summed.
func ServersCPU(tb testing.TB, envs []*Env) float64 {
	tb.Helper()
	var sum float64
	for _, e := range envs {
		_, c := e.serverMetrics(tb)
		sum += c
	}
	return sum
}

// ProcessCPU is the user and system CPU seconds of a child that has exited.
func ProcessCPU(cmd *exec.Cmd) float64 {
	if cmd.ProcessState == nil {
		return 0
	}
	return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
}

// LogCPUFloor reports the CPU a run used (the client's and the API servers') and logs the wall
// time that CPU alone needs on this host's cores: on a host where the servers share the client's
// cores, no fan-out makes a run faster than that.
func LogCPUFloor(b *testing.B, clientCPU, serverCPU float64) {
	b.ReportMetric(clientCPU, "client-cpu-s/op")
	b.ReportMetric(serverCPU, "server-cpu-s/op")
	b.Logf("CPU per run: client %.2f s, API servers %.2f s: at least %.2f s of wall time on %d cores", clientCPU, serverCPU, (clientCPU+serverCPU)/float64(runtime.NumCPU()), runtime.NumCPU())
}

// ResetPeakRSS resets this process's peak resident set size (Linux: /proc/self/clear_refs), so
// that PeakRSSMiB afterwards measures the work in between rather than the test's setup. It
// reports whether the reset worked; elsewhere PeakRSSMiB is the peak since the process started.
func ResetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// RunSampled runs cmd, returning its combined output and its peak RSS in MiB (RunPeakRSS).
func RunSampled(cmd *exec.Cmd) ([]byte, float64, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	peak, err := RunPeakRSS(cmd)
	return out.Bytes(), peak, err
}

// RunPeakRSS runs cmd (its output goes where the caller set it) and returns its peak RSS in MiB,
// sampled from /proc/PID/status (VmHWM) every 20 ms while it runs. The child's rusage is no good
// for this: a child started from a large process reports the parent's RSS at the fork as its own
// maximum.
func RunPeakRSS(cmd *exec.Cmd) (float64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak float64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return peak, err
		case <-tick.C:
			peak = max(peak, vmHWM(status))
		}
	}
}

// PeakRSSMiB is this process's peak resident set size in MiB (VmHWM), or 0 where the kernel does
// not say.
func PeakRSSMiB() float64 { return vmHWM("/proc/self/status") }

func vmHWM(status string) float64 {
	raw, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// CapctlBinaryEnv names the capctl binary `make test` builds once, before its tiers start, for
// every test that runs the command as a child process. Each test package linking its own cost
// about 14 CPU-s, and over two minutes of wall time each on a loaded 2-core run.
const CapctlBinaryEnv = "CAPCTL_TEST_BINARY"

// CapctlBinary is the capctl the tests run as a child process: $CAPCTL_TEST_BINARY when set,
// else capctl built from this checkout into dir (a plain `go test`).
func CapctlBinary(dir string) (string, error) {
	if bin := os.Getenv(CapctlBinaryEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("$%s: %w (unset it to build capctl in the test)", CapctlBinaryEnv, err)
		}
		return bin, nil
	}
	bin := filepath.Join(dir, "capctl")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/capctl")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building capctl: %v\n%s", err, out)
	}
	return bin, nil
}

// BuildCapctl is CapctlBinary for a test: a temporary folder of the test, a build failure fatal.
// Tests and benchmarks run the binary as a child process (so its peak RSS is its own).
func BuildCapctl(tb testing.TB) string {
	tb.Helper()
	bin, err := CapctlBinary(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Median is the median of some figures (the mean of the middle two for an even count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// LoadAverage is the machine's 1, 5 and 15 minute load averages (Linux /proc/loadavg), or
// "unknown": benchmarks on a shared machine log it with their figures.
func LoadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// BenchChild runs a command against the API server once to warm it, then runs times measured,
// and reports the medians of seconds, the requests the server served (less the metrics reads)
// and the child's peak RSS, with the load average. Its output must be a header and rows lines;
// okExit are exit codes that end a run normally besides 0 (diagnose's "problems found").
func (e *Env) BenchChild(b *testing.B, runs, rows int, okExit []int, command func() *exec.Cmd) {
	b.Helper()
	BenchChildOn(b, []*Env{e}, runs, rows, okExit, command)
}

// BenchChildOn is BenchChild for a command that reads several API servers (one per management
// cluster): served/op is the sum of what they all served.
func BenchChildOn(b *testing.B, envs []*Env, runs, rows int, okExit []int, command func() *exec.Cmd) {
	b.Helper()
	// One read of each server's metrics before and after a run gives both its requests and its
	// CPU, so the only reads to subtract are those two.
	served := func() (int64, float64) {
		var n int64
		var cpu float64
		for _, e := range envs {
			r, c := e.serverMetrics(b)
			n, cpu = n+r, cpu+c
		}
		return n, cpu
	}
	var clientCPU, serverCPU []float64
	once := func() (float64, float64, float64) {
		before, cpuBefore := served()
		start := time.Now()
		cmd := command()
		out, peak, err := RunSampled(cmd)
		seconds := time.Since(start).Seconds()
		after, cpuAfter := served()
		clientCPU, serverCPU = append(clientCPU, ProcessCPU(cmd)), append(serverCPU, cpuAfter-cpuBefore)
		if err != nil {
			var exit *exec.ExitError
			ok := false
			if errors.As(err, &exit) {
				for _, c := range okExit {
					ok = ok || exit.ExitCode() == c
				}
			}
			if !ok {
				b.Fatalf("%v\n%s", err, out)
			}
		}
		if lines := strings.Count(strings.TrimSpace(string(out)), "\n") + 1; lines != rows+1 {
			b.Fatalf("%d lines of output, want a header and %d rows:\n%.2000s", lines, rows, out)
		}
		return seconds, float64(after - before - int64(len(envs))), peak
	}
	once()
	clientCPU, serverCPU = nil, nil
	var secs, reqs, rss []float64
	for i := 0; i < runs; i++ {
		s, r, p := once()
		secs, reqs, rss = append(secs, s), append(reqs, r), append(rss, p)
	}
	b.ReportMetric(Median(secs), "s/op")
	b.ReportMetric(Median(reqs), "served/op")
	b.ReportMetric(Median(rss), "peak-RSS-MiB")
	LogCPUFloor(b, Median(clientCPU), Median(serverCPU))
	b.Logf("runs %v s, load %s", secs, LoadAverage())
}
