package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
