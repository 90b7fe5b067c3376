package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// scriptPlugin puts an executable shell script named name on a fresh PATH (the folder first,
// then the test's own PATH for /bin/sh's tools) and returns the folder.
func scriptPlugin(t *testing.T, name, body string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the plugin is a shell script")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

const echoPlugin = `#!/bin/sh
echo "args:$*"
read line
echo "stdin:$line"
echo "warn" >&2
exit 3
`

func TestPluginRunsThroughCapctl(t *testing.T) {
	scriptPlugin(t, "clusterctl-hello", echoPlugin)
	out, errOut, code := runCapctlWithInput(t, "typed\n", "hello", "world", "--kubeconfig", "x")
	if code != 3 {
		t.Errorf("exit code %d, want the plugin's 3 (stderr %q)", code, errOut)
	}
	if want := "args:world --kubeconfig x\nstdin:typed\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if errOut != "warn\n" {
		t.Errorf("stderr %q, want the plugin's alone", errOut)
	}
}

func TestBuiltinWinsOverPlugin(t *testing.T) {
	scriptPlugin(t, "capctl-version", "#!/bin/sh\necho plugin\n")
	out, _, code := runCapctl(t, "version", "-o", "short")
	if code != 0 || strings.Contains(out, "plugin") {
		t.Fatalf("capctl version ran the plugin (code %d): %q", code, out)
	}
	// help is built in too, although cobra adds it only when the command runs.
	out, _, _ = runCapctl(t, "help")
	if strings.Contains(out, "plugin\n") && !strings.Contains(out, "Usage:") {
		t.Fatalf("capctl help ran a plugin: %q", out)
	}
}

func TestUnknownCommandWithoutPlugin(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, errOut, code := runCapctl(t, "no-such-thing")
	if code != 1 || !strings.Contains(errOut, `unknown command "no-such-thing"`) {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}

func TestPluginList(t *testing.T) {
	dir := scriptPlugin(t, "clusterctl-operator", "#!/bin/sh\n")
	if err := os.WriteFile(filepath.Join(dir, "capctl-init"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "capctl-broken"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir) // only this folder
	out, errOut, code := runCapctl(t, "plugin", "list")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	for _, want := range []string{
		"capctl broken", "not executable",
		"capctl init", `shadowed by the built-in command "init"`,
		"capctl operator", filepath.Join(dir, "clusterctl-operator"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plugin list lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runCapctl(t, "plugin", "list", "-o", "json")
	var entries []struct {
		Command  string   `json:"command"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) != 3 {
		t.Fatalf("json %v: %s", err, out)
	}
}

// TestPluginExecByTheBinary runs the built capctl binary, which on Unix replaces itself by the
// plugin: the exit code, arguments and streams must still be the plugin's.
func TestPluginExecByTheBinary(t *testing.T) {
	testenv.SkipShort(t, "plugin test: builds the capctl binary", "integration")
	scriptPlugin(t, "capctl-hello", echoPlugin)
	bin := testenv.BuildCapctl(t)
	cmd := exec.Command(bin, "hello", "-n", "x y")
	cmd.Stdin = strings.NewReader("line\n")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("exit %v, want code 3 (stderr %q)", err, stderr.String())
	}
	if want := "args:-n x y\nstdin:line\n"; stdout.String() != want || stderr.String() != "warn\n" {
		t.Fatalf("stdout %q (want %q), stderr %q", stdout.String(), want, stderr.String())
	}
}

// TestOperatorPluginHelp runs the real Cluster API Operator plugin (clusterctl-operator, built from
// the module proxy by `make operator-plugin`) as `capctl operator`, in-process and through the
// built binary: its help comes through, and so does its exit code for an unknown subcommand.
func TestOperatorPluginHelp(t *testing.T) {
	plugin := testenv.OperatorPlugin(t)
	if runtime.GOOS == "windows" {
		t.Skip("the plugin is linked into a PATH folder")
	}
	dir := t.TempDir()
	if err := os.Symlink(plugin, filepath.Join(dir, "clusterctl-operator")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))

	out, errOut, code := runCapctl(t, "operator", "--help")
	if code != 0 {
		t.Fatalf("capctl operator --help: code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"capioperator [command]", "Initialize a management cluster", "preload"} {
		if !strings.Contains(out, want) {
			t.Errorf("capctl operator --help lacks %q:\n%s", want, out)
		}
	}

	// The plugin's own exit code for a command it does not know, run directly, is what capctl
	// must pass on.
	direct := exec.Command(plugin, "no-such-subcommand")
	err := direct.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("clusterctl-operator no-such-subcommand: %v, want a non-zero exit", err)
	}
	want := exit.ExitCode()
	if _, errOut, code := runCapctl(t, "operator", "no-such-subcommand"); code != want {
		t.Errorf("capctl operator no-such-subcommand: code %d, want the plugin's %d (stderr %q)", code, want, errOut)
	}

	bin := testenv.BuildCapctl(t)
	cmd := exec.Command(bin, "operator", "--help")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "capioperator [command]") {
		t.Fatalf("the capctl binary's operator --help: %v\n%s", err, stdout.String())
	}
	cmd = exec.Command(bin, "operator", "no-such-subcommand")
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != want {
		t.Errorf("the capctl binary's operator no-such-subcommand: %v, want exit %d", err, want)
	}
}
