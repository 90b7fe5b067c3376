// Package demo runs the end-to-end demo (hack/demo.sh, `make demo`) as a test, so CI keeps it
// working as commands change.
package demo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/internal/testing/testenv"
)

func TestDemoScript(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: starts two live management clusters")
	}
	livemgmt.RequireBinaries(t, livemgmt.ManagerVersions[0])
	fixtures := testenv.FixturesDir(t)
	root := testenv.RepoRoot()
	// The demo shows what the controllers do: it must never write status or remove webhooks.
	script, err := os.ReadFile(filepath.Join(root, "hack", "demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, banned := range []string{"--subresource=status", "--subresource status", "webhookconfiguration"} {
		if strings.Contains(strings.ToLower(string(script)), banned) {
			t.Errorf("hack/demo.sh contains %q: the controllers write status and the webhooks stay", banned)
		}
	}
	bin := testenv.BuildCapctl(t)

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "demo.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CAPCTL="+bin, "NO_COLOR=1", "CAPCTL_ENVTEST_DIR="+testenv.AssetsDir(),
		"CAPCTL_CAPI_BINS="+livemgmt.ManagersDir(), "CAPCTL_FIXTURES="+fixtures)
	// On timeout, SIGTERM lets the script's trap stop the management clusters it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	t.Logf("demo took %s", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("hack/demo.sh failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "== Done in") || !strings.Contains(out, "== Stopping the management clusters") {
		t.Fatalf("the demo did not finish and clean up:\n%s", out)
	}
	// Brought up by the controllers on the first management cluster, again after the move, and
	// after the Kubernetes rollout.
	if n := strings.Count(out, "Available=True after"); n < 3 {
		t.Errorf("the demo saw the cluster Available %d times, want 3 (created, moved, rolled):\n%s", n, out)
	}
	// The fleet upgrade went through both waves, each cluster upgraded by the controllers.
	for _, want := range []string{"demo/demo-1: at v1.35.0", "demo/demo-2: at v1.35.0", "Wave 1: done in", "Wave 2: done in"} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's fleet upgrade did not report %q:\n%s", want, out)
		}
	}
	// Every command this build has must have run, not been skipped.
	has := func(args ...string) bool {
		help, err := exec.Command(bin, append(args[:len(args)-1:len(args)-1], "--help")...).Output()
		if err != nil {
			return false
		}
		return regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(args[len(args)-1]) + `( |$)`).Match(help)
	}
	for _, step := range []struct {
		words []string
		shown string
	}{
		{[]string{"init"}, "$ capctl init "},
		{[]string{"generate", "cluster"}, "$ capctl generate cluster "},
		{[]string{"describe", "cluster"}, "$ capctl describe cluster "},
		{[]string{"upgrade", "plan"}, "$ capctl upgrade plan"},
		{[]string{"move"}, "$ capctl move "},
		{[]string{"get", "kubeconfig"}, "$ capctl get kubeconfig "},
		{[]string{"delete"}, "$ capctl delete "},
		{[]string{"upgrade", "plan"}, "$ capctl upgrade plan --kubernetes-version "},
		{[]string{"upgrade", "apply"}, "$ capctl upgrade apply --kubernetes-version "},
	} {
		if has(step.words...) && !strings.Contains(out, step.shown) {
			t.Errorf("capctl %s exists but the demo did not run it:\n%s", strings.Join(step.words, " "), out)
		}
	}
}
