package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/iostreams"
)

// runCapctl runs capctl in-process, as a user would from a shell, and returns its output.
func runCapctl(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCapctlWithInput(t, "", args...)
}

func runCapctlWithInput(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	io, in, out, errOut := iostreams.Test()
	in.WriteString(stdin)
	code = runContext(context.Background(), args, io)
	return out.String(), errOut.String(), code
}

func TestHelpListsCommands(t *testing.T) {
	out, _, code := runCapctl(t, "--help")
	if code != 0 || !strings.Contains(out, "version") || !strings.Contains(out, "--kubeconfig") || !strings.Contains(out, "--kubeconfig-context") {
		t.Fatalf("code %d, help:\n%s", code, out)
	}
}

func TestVersionOutputs(t *testing.T) {
	out, _, code := runCapctl(t, "version", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var v map[string]map[string]string
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if v["capctl"]["gitVersion"] == "" || v["capctl"]["platform"] == "" {
		t.Errorf("fields missing: %v", v)
	}
	out, _, _ = runCapctl(t, "version", "-o", "short")
	if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "v") {
		t.Errorf("short: %q", out)
	}
	out, _, _ = runCapctl(t, "version", "-o", "yaml")
	if !strings.Contains(out, "gitVersion:") {
		t.Errorf("yaml: %q", out)
	}
	_, errOut, code := runCapctl(t, "version", "-o", "xml")
	if code == 0 || !strings.Contains(errOut, "invalid output format") {
		t.Errorf("xml accepted: %d %s", code, errOut)
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "__start_capctl", "zsh": "#compdef capctl", "fish": "complete -c capctl", "powershell": "Register-ArgumentCompleter"} {
		out, errOut, code := runCapctl(t, "completion", shell)
		if code != 0 || !strings.Contains(out, marker) {
			t.Errorf("%s: exit %d, stderr %s, marker %q missing", shell, code, errOut, marker)
		}
	}
	if _, _, code := runCapctl(t, "completion", "tcsh"); code == 0 {
		t.Error("unknown shell accepted")
	}
}

func TestUsageErrors(t *testing.T) {
	_, errOut, code := runCapctl(t, "no-such-command")
	if code == 0 || !strings.Contains(errOut, "unknown command") || !strings.Contains(errOut, "Usage:") {
		t.Errorf("unknown command: %d %s", code, errOut)
	}
	_, errOut, code = runCapctl(t, "version", "--no-such-flag")
	if code == 0 || !strings.Contains(errOut, "unknown flag") || !strings.Contains(errOut, "Usage:") {
		t.Errorf("unknown flag: %d %s", code, errOut)
	}
}

// walkCommands calls fn for every command of capctl's tree, the root first.
func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walkCommands(sub, fn)
	}
}

// TestEveryParentBehavesAlike: every command with subcommands, run without one, prints its help
// on stdout and exits 0 (as clusterctl's parents do); a word that names no subcommand is a usage
// error naming it, with the usage.
func TestEveryParentBehavesAlike(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	var parents [][]string
	walkCommands(newRootCmd(newFactory(io)), func(c *cobra.Command) {
		if c.Annotations[parentAnnotation] != "" {
			parents = append(parents, strings.Fields(c.CommandPath())[1:])
		}
	})
	if len(parents) < 10 {
		t.Fatalf("only %d parents found: %v", len(parents), parents)
	}
	for _, p := range parents {
		path := strings.Join(append([]string{"capctl"}, p...), " ")
		out, errOut, code := runCapctl(t, p...)
		if code != 0 || errOut != "" || !strings.Contains(out, "Usage:\n") || !strings.Contains(out, "\n  "+path+" [command]\n") {
			t.Errorf("capctl %s: exit %d, stderr %q, stdout %q", strings.Join(p, " "), code, errOut, out)
		}
		out, errOut, code = runCapctl(t, append(p, "no-such-subcommand")...)
		want := `unknown command "no-such-subcommand" for "` + path + `"`
		if code != 1 || out != "" || !strings.Contains(errOut, want) || !strings.Contains(errOut, "Usage:") {
			t.Errorf("capctl %s no-such-subcommand: exit %d, stdout %q, stderr %q", strings.Join(p, " "), code, out, errOut)
		}
	}
}

// TestInvocationErrorsAreTypedUsageErrors: cobra's own checks (argument counts and values, flag
// values, exclusive flags) end as usageError, whatever their text; an error of a command's run
// that merely reads like one ("invalid argument") is not.
func TestInvocationErrorsAreTypedUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"version", "extra"},
		{"get", "kubeconfig"},
		{"completion", "tcsh"},
		{"version", "--no-such-flag"},
		{"describe", "clusters", "-n", "a", "-A"},
	} {
		_, errOut, code := runCapctl(t, args...)
		if code != 1 || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	io, _, _, _ := iostreams.Test()
	root := newRootCmd(newFactory(io))
	cmd, _, err := root.Find([]string{"version"})
	if err != nil {
		t.Fatal(err)
	}
	var ue usageError
	if err := cmd.Args(cmd, []string{"x"}); !errors.As(err, &ue) {
		t.Errorf("version x: %T %v, want a usageError", err, err)
	}
	if err := cmd.Args(cmd, nil); err != nil {
		t.Errorf("version: %v", err)
	}
	run := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return errors.New("invalid argument from the server") }}
	applyInvocationRules(run)
	run.SetOut(io.Out)
	run.SetErr(io.ErrOut)
	if err := run.Execute(); err == nil || errors.As(err, &ue) {
		t.Errorf("a run error became a usage error: %v", err)
	}
}

// TestSharedNamespaceRules: -n with -A, and a namespace that is no valid name, are usage errors
// before any cluster is contacted, on every command that takes them.
func TestSharedNamespaceRules(t *testing.T) {
	for _, args := range [][]string{
		{"describe", "cluster", "c", "-n", "Bad_NS"},
		{"describe", "cluster", "Bad_Name"},
		{"describe", "clusters", "-n", "Bad_NS"},
		{"diagnose", "clusters", "-n", "Bad_NS"},
		{"move", "-n", "Bad_NS", "--dry-run"},
		{"alpha", "rollout", "pause", "machinedeployment/md", "-n", "Bad_NS"},
		{"upgrade", "plan", "--kubernetes-version", "v1.35.1", "-n", "Bad_NS"},
	} {
		_, errOut, code := runCapctl(t, append(args, "--kubeconfig", "/nonexistent/kubeconfig")...)
		if code != 1 || !strings.Contains(errOut, "Bad_") || !strings.Contains(errOut, "Usage:") || strings.Contains(errOut, "nonexistent") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	for _, args := range [][]string{
		{"describe", "clusters", "-A", "-n", "x"},
		{"diagnose", "clusters", "-A", "-n", "x"},
		{"move", "-A", "-n", "x", "--dry-run"},
		{"upgrade", "plan", "--kubernetes-version", "v1.35.1", "-A", "-n", "x"},
	} {
		_, errOut, code := runCapctl(t, append(args, "--kubeconfig", "/nonexistent/kubeconfig")...)
		if code != 1 || !strings.Contains(errOut, "[namespace all-namespaces] are set none of the others can be") || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
