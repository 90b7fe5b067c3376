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

	"github.com/capctl/capctl/internal/testenv"
)

func TestDemoScript(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts two real API servers")
	}
	root := testenv.RepoRoot()
	bin := filepath.Join(t.TempDir(), "capctl")
	build := exec.Command("go", "build", "-o", bin, "./cmd/capctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building capctl: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "demo.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CAPCTL="+bin, "NO_COLOR=1", "CAPCTL_ENVTEST_DIR="+testenv.AssetsDir())
	// On timeout, SIGTERM lets the script's trap stop the API servers it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	t.Logf("demo took %s", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("hack/demo.sh failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "== Done in") || !strings.Contains(out, "== Stopping the API servers") {
		t.Fatalf("the demo did not finish and clean up:\n%s", out)
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
	} {
		if has(step.words...) && !strings.Contains(out, step.shown) {
			t.Errorf("capctl %s exists but the demo did not run it:\n%s", strings.Join(step.words, " "), out)
		}
	}
}
