package plugin

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func builtins(names ...string) func(string) bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return func(s string) bool { return m[s] }
}

func skipWindows(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the plugins here are shell scripts")
	}
}

func TestFindOrderAndNames(t *testing.T) {
	skipWindows(t)
	a, b := t.TempDir(), t.TempDir()
	path := a + string(os.PathListSeparator) + b
	script := "#!/bin/sh\nexit 0\n"
	clusterctlOp := writeFile(t, a, "clusterctl-operator", script, 0o755)
	capctlFooBar := writeFile(t, b, "capctl-foo-bar", script, 0o755)
	capctlFoo := writeFile(t, b, "capctl-foo", script, 0o755)
	dashed := writeFile(t, b, "capctl-my_tool", script, 0o755)
	writeFile(t, a, "capctl-notexec", script, 0o644)
	writeFile(t, a, "capctl-init", script, 0o755)
	// Not plugins: executables a path in the command's words would reach.
	writeFile(t, b, "evil", script, 0o755)
	writeFile(t, filepath.Dir(b), "evil", script, 0o755)

	cases := []struct {
		args     []string
		wantPath string
		wantRest []string
	}{
		{[]string{"operator", "--help"}, clusterctlOp, []string{"--help"}},
		{[]string{"foo", "bar", "-x", "y"}, capctlFooBar, []string{"-x", "y"}},
		{[]string{"foo", "baz"}, capctlFoo, []string{"baz"}},
		{[]string{"foo", "-z", "bar"}, capctlFoo, []string{"-z", "bar"}},
		{[]string{"my-tool"}, dashed, []string{}},
		{[]string{"notexec"}, "", nil},
		{[]string{"init"}, "", nil},                                        // a built-in always wins
		{[]string{"--help"}, "", nil},                                      // flags first: no plugin
		{[]string{"missing"}, "", nil},                                     // nothing on PATH
		{[]string{"../../evil"}, "", nil},                                  // capctl-../../evil is b/evil
		{[]string{"../../../evil"}, "", nil},                               // and one folder up
		{[]string{"x/../../../evil"}, "", nil},                             // a path in any form
		{[]string{"foo", "../../evil"}, capctlFoo, []string{"../../evil"}}, // the name ends before a path
	}
	for _, c := range cases {
		p, rest, ok := Find(c.args, path, builtins("init"))
		if c.wantPath == "" {
			if ok {
				t.Errorf("%v: found %s, want none", c.args, p.Path)
			}
			continue
		}
		if !ok || p.Path != c.wantPath || strings.Join(rest, " ") != strings.Join(c.wantRest, " ") {
			t.Errorf("%v: got %v %q %v, want %s %q", c.args, ok, p.Path, rest, c.wantPath, c.wantRest)
		}
	}

	// capctl- is looked up before clusterctl-, whatever their order on PATH.
	capctlOp := writeFile(t, b, "capctl-operator", script, 0o755)
	if p, _, _ := Find([]string{"operator"}, path, builtins()); p.Path != capctlOp {
		t.Errorf("operator runs %s, want the capctl- one %s", p.Path, capctlOp)
	}
}

func TestListWarnings(t *testing.T) {
	skipWindows(t)
	a, b := t.TempDir(), t.TempDir()
	path := strings.Join([]string{a, b, filepath.Join(a, "does-not-exist")}, string(os.PathListSeparator))
	script := "#!/bin/sh\nexit 0\n"
	writeFile(t, a, "clusterctl-operator", script, 0o755)
	writeFile(t, b, "capctl-operator", script, 0o755)
	writeFile(t, a, "capctl-tool", script, 0o755)
	writeFile(t, b, "capctl-tool", script, 0o755)
	writeFile(t, a, "capctl-init", script, 0o755)
	writeFile(t, a, "capctl-plain", script, 0o644)
	writeFile(t, a, "capctl-ok_one", script, 0o755)
	writeFile(t, a, "unrelated", script, 0o755)

	got := map[string]string{}
	for _, e := range List(path, builtins("init")) {
		got[e.Path] = e.Command + ": " + strings.Join(e.Warnings, "; ")
	}
	want := map[string]string{
		filepath.Join(a, "clusterctl-operator"): "operator: shadowed by " + filepath.Join(b, "capctl-operator") + ", which `capctl operator` runs",
		filepath.Join(b, "capctl-operator"):     "operator: ",
		filepath.Join(a, "capctl-tool"):         "tool: ",
		filepath.Join(b, "capctl-tool"):         "tool: shadowed by " + filepath.Join(a, "capctl-tool") + ", which `capctl tool` runs",
		filepath.Join(a, "capctl-init"):         `init: shadowed by the built-in command "init": it never runs`,
		filepath.Join(a, "capctl-plain"):        "plain: not executable: it is skipped (chmod +x it to use it)",
		filepath.Join(a, "capctl-ok_one"):       "ok-one: ",
	}
	if len(got) != len(want) {
		t.Errorf("listed %d files, want %d: %v", len(got), len(want), got)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s:\n got  %q\n want %q", p, got[p], w)
		}
	}
}

func TestRunPassesArgsStreamsEnvAndExitCode(t *testing.T) {
	skipWindows(t)
	dir := t.TempDir()
	p := writeFile(t, dir, "capctl-echo", `#!/bin/sh
echo "args:$#:$1|$2"
echo "env:$PLUGIN_TEST_VALUE"
read line
echo "stdin:$line"
echo "to stderr" >&2
exit 7
`, 0o755)
	t.Setenv("PLUGIN_TEST_VALUE", "from-capctl")
	var out, errOut bytes.Buffer
	code, err := Run(Plugin{Path: p, Name: "echo"}, []string{"a b", "--flag"}, strings.NewReader("hello\n"), &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if code != 7 {
		t.Errorf("exit code %d, want 7", code)
	}
	if want := "args:2:a b|--flag\nenv:from-capctl\nstdin:hello\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	if errOut.String() != "to stderr\n" {
		t.Errorf("stderr %q", errOut.String())
	}
}
