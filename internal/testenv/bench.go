package testenv

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
)

// ServedRequests is the API server's own count of the requests it has served
// (apiserver_request_total), so that capctl and another tool run against the server are counted
// alike. Reading the metrics is itself one request.
func (e *Env) ServedRequests(tb testing.TB) int64 {
	tb.Helper()
	raw, err := e.Client.Discovery.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		tb.Fatalf("reading the API server's metrics: %v", err)
	}
	var total float64
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			total += v
		}
	}
	return int64(total)
}

// ResetPeakRSS resets this process's peak resident set size (Linux: /proc/self/clear_refs), so
// that PeakRSSMiB afterwards measures the work in between rather than the test's setup. It
// reports whether the reset worked; elsewhere PeakRSSMiB is the peak since the process started.
func ResetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// PeakRSSMiB is this process's peak resident set size in MiB (VmHWM), or 0 where the kernel does
// not say.
func PeakRSSMiB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
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
