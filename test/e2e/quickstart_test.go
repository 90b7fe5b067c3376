package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/internal/testing/testenv"
)

// quickstartStep is one command of the README's quick start and the output lines shown under it.
type quickstartStep struct {
	command string
	want    []string
}

// readQuickstart extracts the quick start from README.md: the console block after the
// `<!-- quickstart` comment. Lines starting with "$ " are commands (a trailing backslash joins
// the next line); the other lines are output that must appear, "…" standing for anything.
func readQuickstart(t *testing.T) []quickstartStep {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "<!-- quickstart")
	if i < 0 {
		t.Fatal("README.md has no <!-- quickstart --> block")
	}
	text = text[i:]
	start := strings.Index(text, "```console\n")
	if start < 0 {
		t.Fatal("the README quick start has no ```console block after its marker")
	}
	text = text[start+len("```console\n"):]
	text = text[:strings.Index(text, "\n```")]
	var steps []quickstartStep
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			for strings.HasSuffix(cmd, `\`) && sc.Scan() {
				cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(sc.Text())
			}
			steps = append(steps, quickstartStep{command: cmd})
			continue
		}
		if len(steps) == 0 {
			t.Fatalf("README quick start: output line %q before any command", line)
		}
		if strings.TrimSpace(line) != "" {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		}
	}
	return steps
}

// outputPattern turns a README output line into a pattern: "…" matches anything, a run of
// blanks any run of blanks (tables are padded to the widest cell).
func outputPattern(line string) *regexp.Regexp {
	parts := strings.Split(strings.TrimSpace(line), "…")
	for i, p := range parts {
		words := strings.Fields(p)
		for j, w := range words {
			words[j] = regexp.QuoteMeta(w)
		}
		parts[i] = strings.Join(words, `\s+`)
	}
	return regexp.MustCompile(strings.Join(parts, `.*`))
}

func TestReadQuickstart(t *testing.T) {
	steps := readQuickstart(t)
	var cmds []string
	for _, s := range steps {
		cmds = append(cmds, strings.Fields(s.command)[0]+" "+strings.Fields(s.command)[1])
	}
	got := strings.Join(cmds, ", ")
	// The five commands, in order, after the feature gate the in-memory flavor needs.
	for _, want := range []string{"capctl init", "capctl generate", "capctl describe", "capctl upgrade", "capctl move"} {
		if !strings.Contains(got, want) {
			t.Errorf("the README quick start lacks %q: %s", want, got)
		}
	}
	if !outputPattern("cluster-api   CoreProvider  v1.14.0 … installed (… objects)").MatchString("cluster-api               CoreProvider           v1.14.0   capi-system   v1beta2    installed (52 objects)") {
		t.Error("outputPattern does not match a padded table row")
	}
}

// TestQuickstartLive runs the README's quick start as a user would, in a shell, with the real
// capctl binary and kubectl, against a live management cluster: every command must succeed and
// print the lines the README shows. Between `describe` and the rest it waits, as the README
// says to, until the controllers report the cluster Available (re-running describe then).
func TestQuickstartLive(t *testing.T) {
	sideBySide(t)
	steps := readQuickstart(t)
	fixtures := testenv.FixturesDir(t)
	_, clusters := livemgmt.Start(t, 1)
	mgmt := clusters[0]

	home := t.TempDir()
	if _, err := livemgmt.WriteConfig(filepath.Join(home, "config", "cluster-api"), fixtures); err != nil {
		t.Fatal(err)
	}
	// The user's machine: capctl and kubectl on PATH, the management cluster as the current
	// context, clusterctl.yaml where capctl looks by default.
	bin := filepath.Join(home, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"capctl": capctlBin, "kubectl": filepath.Join(testenv.AssetsDir(), "kubectl")} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+mgmt.Kubeconfig,
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_CACHE_HOME="+filepath.Join(home, "cache"), "NO_COLOR=1")
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}

	run := func(command string, logged bool) (string, error) {
		cmd := exec.Command("bash", "-o", "pipefail", "-c", command)
		cmd.Dir, cmd.Env = work, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		if logged {
			// The log is the quick start's captured output, ready to shorten into the README.
			t.Logf("$ %s (%s)\n%s", command, time.Since(start).Round(100*time.Millisecond), out.String())
		}
		return out.String(), err
	}
	shell := func(command string) (string, error) { return run(command, true) }

	var clusterName string
	for _, s := range steps {
		if kv, ok := strings.CutPrefix(s.command, "export "); ok {
			env = append(env, kv) // an export lasts for the following commands, as in the user's shell
			continue
		}
		fields := strings.Fields(s.command)
		out, err := shell(s.command)
		switch {
		case len(fields) > 2 && fields[1] == "generate" && err != nil && strings.Contains(out, "failed calling webhook"):
			// Once init has seen the CA injected, the API server may call the webhook without it
			// for a moment (see waitWebhooksAnswer); a user would re-run the command.
			deadline := time.Now().Add(time.Minute)
			for err != nil && strings.Contains(out, "failed calling webhook") && time.Now().Before(deadline) {
				time.Sleep(2 * time.Second)
				out, err = shell(s.command)
			}
		case len(fields) > 3 && fields[1] == "describe" && err == nil:
			clusterName = fields[3]
			if werr := waitAvailable(run, clusterName, 7*time.Minute); werr != nil {
				t.Fatal(werr)
			}
			out, err = shell(s.command)
		}
		if err != nil {
			t.Fatalf("README quick start: `%s` failed: %v\n%s", s.command, err, out)
		}
		for _, w := range s.want {
			if !outputPattern(w).MatchString(out) {
				t.Errorf("README quick start: `%s` did not print a line like %q", s.command, w)
			}
		}
	}
	if clusterName == "" {
		t.Fatal("the quick start has no `capctl describe cluster NAME`")
	}
	// The backup the last command wrote is a complete one.
	if _, err := os.Stat(filepath.Join(work, "capi-backup", "capctl-backup.yaml")); err != nil {
		t.Errorf("the quick start's backup is incomplete: %v", err)
	}
}

// waitAvailable polls, with kubectl as a user would, until the controllers report the Cluster
// Available.
func waitAvailable(run func(string, bool) (string, error), name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		out, _ := run(fmt.Sprintf(`kubectl get cluster %s -o jsonpath='{.status.conditions[?(@.type=="Available")].status}'`, name), false)
		if strings.TrimSpace(out) == "True" {
			return nil
		}
		if time.Now().After(deadline) {
			out, _ := run("capctl describe cluster "+name+" --show-conditions all", true)
			return fmt.Errorf("cluster %s not Available after %s:\n%s", name, timeout, out)
		}
		time.Sleep(5 * time.Second)
	}
}
