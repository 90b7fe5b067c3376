package output

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/iostreams"
)

func TestWriteStructuredAndRender(t *testing.T) {
	v := map[string]any{"name": "cluster-api", "count": 2}
	var b bytes.Buffer
	if err := WriteStructured(&b, JSON, v); err != nil || b.String() != "{\n  \"count\": 2,\n  \"name\": \"cluster-api\"\n}\n" {
		t.Errorf("json %q %v", b.String(), err)
	}
	b.Reset()
	if err := WriteStructured(&b, YAML, v); err != nil || b.String() != "count: 2\nname: cluster-api\n" {
		t.Errorf("yaml %q %v", b.String(), err)
	}
	if err := WriteStructured(&b, Text, v); err == nil {
		t.Error("text accepted as structured")
	}
	b.Reset()
	called := false
	_ = Render(&b, Text, v, func(io.Writer) error { called = true; return nil })
	if !called || b.Len() != 0 {
		t.Error("text renderer not called")
	}
	b.Reset()
	_ = Render(&b, JSON, v, func(io.Writer) error { t.Error("text called for json"); return nil })
	var back map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Error(err)
	}
}

func TestTableBorderless(t *testing.T) {
	var b bytes.Buffer
	tb := NewTable(&b, "NAME", "TYPE", "VERSION")
	tb.Row("cluster-api", "CoreProvider", "v1.14.0")
	tb.Row("kubeadm", "BootstrapProvider", "")
	tb.Row("bad\tcell", "x\ny", "z")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME          TYPE                VERSION\n" +
		"cluster-api   CoreProvider        v1.14.0\n" +
		"kubeadm       BootstrapProvider\n" +
		"bad cell      x y                 z\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if tb.Rows() != 3 {
		t.Errorf("rows %d", tb.Rows())
	}
}

func TestWritePrivateFileNewAndExisting0644(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "creds.yaml")
	if err := WritePrivateFile(p, []byte("a: 1\n")); err != nil {
		t.Fatal(err)
	}
	assertPrivate(t, p, "a: 1\n")

	// An existing world-readable file ends up 0600 with the new content.
	if err := os.WriteFile(p, []byte("old, longer content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivateFile(p, []byte("secret\n")); err != nil {
		t.Fatal(err)
	}
	assertPrivate(t, p, "secret\n")

	// A symlink is followed: the file it points at is replaced, the link stays.
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink("creds.yaml", link); err != nil {
		t.Fatal(err)
	}
	if err := WritePrivateFile(link, []byte("via link\n")); err != nil {
		t.Fatal(err)
	}
	assertPrivate(t, p, "via link\n")
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced: %v %v", st, err)
	}

	// No temporary file is left behind, and a directory is refused.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("left behind: %v", entries)
	}
	if err := WritePrivateFile(dir, []byte("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	if err := WritePrivateFile(filepath.Join(dir, "missing", "f"), []byte("x")); err == nil {
		t.Error("missing directory accepted")
	}
}

func assertPrivate(t *testing.T, p, content string) {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s mode %v, want 0600", p, st.Mode().Perm())
	}
	if b, _ := os.ReadFile(p); string(b) != content {
		t.Errorf("%s holds %q, want %q", p, b, content)
	}
}

func TestProgressPlainLinesWithoutTerminal(t *testing.T) {
	s, _, _, errOut := iostreams.Test()
	p := NewProgress(s)
	count := p.Counter(map[string]string{"create": "Creating objects"})
	for i := 0; i <= 100; i++ {
		count("create", i, 100)
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if len(lines) != 11 || lines[0] != "Creating objects: 0/100" || lines[10] != "Creating objects: 100/100" {
		t.Errorf("%d lines: %q", len(lines), lines)
	}
	if strings.Contains(errOut.String(), "\r") || strings.Contains(errOut.String(), "\033") {
		t.Error("redraw or colour without a terminal")
	}
	errOut.Reset()
	stop := p.Start("Waiting for providers")
	stop(nil)
	if errOut.String() != "Waiting for providers...\nWaiting for providers: done\n" {
		t.Errorf("spinner without terminal: %q", errOut.String())
	}
}

func TestProgressTerminalRespectsNoColor(t *testing.T) {
	t.Setenv("TERM", "xterm")
	for _, noColor := range []bool{false, true} {
		if noColor {
			t.Setenv("NO_COLOR", "1")
		} else {
			t.Setenv("NO_COLOR", "") // restored after the test
			os.Unsetenv("NO_COLOR")
		}
		s, _, _, errOut := iostreams.Test()
		s.SetTTY(false, false, true)
		p := NewProgress(s)
		p.interval = time.Millisecond
		stop := p.Start("Waiting")
		time.Sleep(5 * time.Millisecond)
		stop(nil)
		out := errOut.String()
		if !strings.Contains(out, "\r") || !strings.HasSuffix(out, "Waiting\n") {
			t.Errorf("no redraw on a terminal: %q", out)
		}
		if hasColor := strings.Contains(out, "\033[32m"); hasColor == noColor {
			t.Errorf("NO_COLOR=%v but colour %v: %q", noColor, hasColor, out)
		}
	}
	t.Setenv("TERM", "dumb")
	s, _, _, _ := iostreams.Test()
	s.SetTTY(false, false, true)
	if NewProgress(s).redraw {
		t.Error("TERM=dumb redraws")
	}
}

func TestObjectsYAMLAndJSON(t *testing.T) {
	objs := []unstructured.Unstructured{
		{Object: map[string]any{"kind": "Namespace", "apiVersion": "v1", "metadata": map[string]any{"name": "a"}}},
		{Object: map[string]any{"kind": "ConfigMap", "apiVersion": "v1", "metadata": map[string]any{"name": "b", "namespace": "a"}}},
	}
	y, err := ObjectsYAML(objs)
	want := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: a\n"
	if err != nil || string(y) != want {
		t.Errorf("yaml:\n%s\n%v", y, err)
	}
	j, err := ObjectsJSON(objs)
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err != nil || json.Unmarshal(j, &list) != nil || list.Kind != "List" || len(list.Items) != 2 || !strings.HasSuffix(string(j), "}\n") {
		t.Errorf("json: %s %v", j, err)
	}
}

func TestWriteFileAtomicKeepsTheGivenMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "versions.json")
	for _, content := range []string{"[1]", "[1,2]"} {
		if err := WriteFileAtomic(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if b, _ := os.ReadFile(p); err != nil || st.Mode().Perm() != 0o644 || string(b) != content {
			t.Errorf("mode %v content %q %v", st.Mode().Perm(), b, err)
		}
	}
}

func TestTableAlignsColouredAndWideCells(t *testing.T) {
	var b bytes.Buffer
	tb := NewTable(&b, "NAME", "READY", "STATUS")
	tb.Row("\x1b[90m├─\x1b[0mMachine/a", "\x1b[32mTrue\x1b[0m", "ok")
	tb.Row("└─Machine/bb", "False", "Δ")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	plain := ansi.ReplaceAllString(b.String(), "")
	want := "" +
		"NAME           READY   STATUS\n" +
		"├─Machine/a    True    ok\n" +
		"└─Machine/bb   False   Δ\n"
	if plain != want {
		t.Errorf("got\n%s\nwant\n%s", plain, want)
	}
}

func TestWriteObjectsToStdoutOrAPrivateFile(t *testing.T) {
	objs := []unstructured.Unstructured{{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}}}}
	yamlDoc := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"
	for _, path := range []string{"", "-"} {
		var out, errOut bytes.Buffer
		if err := WriteObjects(&out, &errOut, objs, Text, path); err != nil {
			t.Fatal(err)
		}
		if out.String() != yamlDoc || errOut.Len() != 0 {
			t.Errorf("path %q: stdout %q, stderr %q", path, out.String(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if err := WriteObjects(&out, &errOut, objs, JSON, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "{\n  \"apiVersion\": \"v1\",\n  \"items\": [") {
		t.Errorf("json: %q", out.String())
	}
	out.Reset()
	path := filepath.Join(t.TempDir(), "objs.yaml")
	if err := WriteObjects(&out, &errOut, objs, YAML, path); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 || errOut.String() != "Wrote 1 objects to "+path+"\n" {
		t.Errorf("file: stdout %q, stderr %q", out.String(), errOut.String())
	}
	b, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || string(b) != yamlDoc || fi.Mode().Perm() != 0o600 {
		t.Errorf("file: %q, %v, %v", b, fi.Mode(), err)
	}
}
