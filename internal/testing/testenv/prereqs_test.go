package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runPrereqs runs hack/prereqs.sh (at root, a checkout or a copy of its hack/prereqs.sh and go.mod)
// with env added to the environment, and returns its stderr and exit error. It must stop within
// 10 s whatever is missing.
func runPrereqs(t *testing.T, root string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", append([]string{filepath.Join(root, "hack", "prereqs.sh")}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("hack/prereqs.sh took %s, more than 10 s", took.Round(time.Millisecond))
	}
	return stderr.String(), err
}

// pathWithout is a folder of links to every command on $PATH but the named ones: a PATH on
// which those are missing and everything else is as before.
func pathWithout(t *testing.T, missing ...string) string {
	t.Helper()
	bin := t.TempDir()
	skip := map[string]bool{}
	for _, m := range missing {
		skip[m] = true
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if skip[name] {
				continue
			}
			if _, err := os.Lstat(filepath.Join(bin, name)); err == nil {
				continue // an earlier PATH entry wins, as in a lookup
			}
			_ = os.Symlink(filepath.Join(dir, name), filepath.Join(bin, name))
		}
	}
	return bin
}

func TestPrereqsNamesMissingIP(t *testing.T) {
	bin := pathWithout(t, "ip")
	stderr, err := runPrereqs(t, RepoRoot(), []string{"PATH=" + bin, "PREREQS_IP_FALLBACKS=", "LIVEMGMT_NETNS=", "PREREQS_MIN_FREE_GIB=0"})
	if err == nil {
		t.Fatalf("hack/prereqs.sh passed without ip on PATH:\n%s", stderr)
	}
	if !strings.Contains(stderr, "the ip command is missing: apt-get install iproute2") {
		t.Errorf("the failure does not name ip and iproute2:\n%s", stderr)
	}

	// The harness's own switch: clusters share the host's network, so ip is not needed.
	stderr, err = runPrereqs(t, RepoRoot(), []string{"PATH=" + bin, "PREREQS_IP_FALLBACKS=", "LIVEMGMT_NETNS=off", "PREREQS_MIN_FREE_GIB=0"})
	if strings.Contains(stderr, "ip command") {
		t.Errorf("LIVEMGMT_NETNS=off still asks for ip (%v):\n%s", err, stderr)
	}
	// The integration tier starts no live management cluster.
	stderr, _ = runPrereqs(t, RepoRoot(), []string{"PATH=" + bin, "PREREQS_IP_FALLBACKS=", "LIVEMGMT_NETNS=", "PREREQS_MIN_FREE_GIB=0"}, "integration")
	if strings.Contains(stderr, "ip command") {
		t.Errorf("make integration asks for ip:\n%s", stderr)
	}
}

func TestPrereqsNamesMissingGoAndDisk(t *testing.T) {
	stderr, err := runPrereqs(t, RepoRoot(), []string{"PATH=" + pathWithout(t, "go"), "PREREQS_MIN_FREE_GIB=1000000000", "LIVEMGMT_NETNS=off"}, "demo")
	if err == nil {
		t.Fatalf("hack/prereqs.sh passed without go and without the disk asked for:\n%s", stderr)
	}
	for _, want := range []string{"go is not on PATH: install Go", "GiB free for", "make demo needs about 1000000000 GiB"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the failure lacks %q:\n%s", want, stderr)
		}
	}
}

// Without any fixtures folder the script asks the module proxy; one that does not answer is named.
func TestPrereqsFixturesUnbuildable(t *testing.T) {
	root := filepath.Join(t.TempDir(), "clone") // no ../shared/fixtures beside it
	if err := os.MkdirAll(filepath.Join(root, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", filepath.Join("hack", "prereqs.sh")} {
		data, err := os.ReadFile(filepath.Join(RepoRoot(), f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"CAPCTL_FIXTURES=", "CAPCTL_FIXTURES_CACHE=" + t.TempDir(), "GOPROXY=off",
		"GOMODCACHE=" + t.TempDir(), "GOFLAGS=-modcacherw", "LIVEMGMT_NETNS=off", "PREREQS_MIN_FREE_GIB=0"}
	stderr, err := runPrereqs(t, root, env)
	if err == nil {
		t.Fatalf("hack/prereqs.sh passed with no fixtures and no module proxy:\n%s", stderr)
	}
	if !strings.Contains(stderr, "the fixtures are not built and the Go module proxy did not serve") {
		t.Errorf("the failure does not name the fixtures and the module proxy:\n%s", stderr)
	}

	// A complete build in the cache is enough.
	cache := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cache, ".stamps"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, ".stamps", "complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stderr, _ = runPrereqs(t, root, append(env, "CAPCTL_FIXTURES_CACHE="+cache))
	if strings.Contains(stderr, "fixtures") {
		t.Errorf("complete fixtures in the cache are reported missing:\n%s", stderr)
	}
}
