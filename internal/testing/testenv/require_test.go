package testenv

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// recorder stands in for a test to see whether Require skips or fails it.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                          {}
func (r *recorder) Skip(args ...any)                 { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Skipf(format string, args ...any) { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatal(args ...any)                { r.failed = fmt.Sprint(args...) }

func TestRequire(t *testing.T) {
	for _, tc := range []struct {
		name, ci, target string
		ok               bool
		skip, fail       string
	}{
		{name: "present", ok: true},
		{name: "present in CI", ci: "true", ok: true},
		{name: "missing locally skips", target: "envtest-bins", skip: "missing etcd in /x: run `make envtest-bins`"},
		{name: "missing in CI fails", ci: "true", target: "envtest-bins", fail: "missing etcd in /x: run `make envtest-bins` (CI=true: a missing prerequisite fails the test)"},
		{name: "CI=1 is CI", ci: "1", target: "envtest-bins", fail: "missing etcd in /x: run `make envtest-bins` (CI=true: a missing prerequisite fails the test)"},
		{name: "CI=false is local", ci: "false", target: "envtest-bins", skip: "missing etcd in /x: run `make envtest-bins`"},
		{name: "no target", skip: "missing etcd in /x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{}
			Require(r, "etcd in /x", tc.target, tc.ok)
			if r.skipped != tc.skip || r.failed != tc.fail {
				t.Errorf("skipped %q, failed %q; want skipped %q, failed %q", r.skipped, r.failed, tc.skip, tc.fail)
			}
		})
	}
}

func TestClusterctlLooksInTheCache(t *testing.T) {
	if testing.Short() {
		t.Skip("checks the non-short path of Clusterctl")
	}
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("CAPCTL_CLUSTERCTL", "")
	t.Setenv("CI", "")
	r := &recorder{}
	got := Clusterctl(r)
	want := filepath.Join(cache, "capctl", "clusterctl", ClusterctlVersion, "clusterctl")
	if got != want || !strings.Contains(r.skipped, want) || !strings.Contains(r.skipped, "make clusterctl-bin") {
		t.Errorf("Clusterctl = %q, skipped %q; want %q and a skip naming it and `make clusterctl-bin`", got, r.skipped, want)
	}
}
