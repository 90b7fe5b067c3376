package convert

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capctl/capctl/pkg/conversion"
	capenv "github.com/capctl/capctl/pkg/env"
)

func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

const mhcV1beta1 = "apiVersion: cluster.x-k8s.io/v1beta1\nkind: MachineHealthCheck\nmetadata:\n  name: m\n  namespace: a\nspec:\n  clusterName: c\n  selector: {}\n  nodeStartupTimeout: 10m\n"

// A fleet repository: converted in place, every *.yaml below the folder, hidden folders and
// other files left alone, modes kept.
func TestRunDirectoryInPlace(t *testing.T) {
	dir := t.TempDir()
	classic := readTestdata(t, "classic-v1beta1.yaml")
	writeFile(t, filepath.Join(dir, "clusters", "prod-1.yaml"), classic, 0o640)
	writeFile(t, filepath.Join(dir, "clusters", "eu", "mhc.yml"), []byte(mhcV1beta1), 0o644)
	plain := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	writeFile(t, filepath.Join(dir, "apps", "cm.yaml"), plain, 0o644)
	writeFile(t, filepath.Join(dir, ".git", "old.yaml"), []byte(mhcV1beta1), 0o644)
	writeFile(t, filepath.Join(dir, "README.md"), []byte(mhcV1beta1), 0o644)

	// Dry run first: the report, nothing written.
	rep, err := Run(context.Background(), capenv.Env{}, Request{Paths: []string{dir}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 3 || len(rep.Written) != 0 {
		t.Fatalf("dry run: %d files, written %v", len(rep.Files), rep.Written)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "clusters", "prod-1.yaml")); !bytes.Equal(got, classic) {
		t.Fatal("dry run wrote the file")
	}
	conv, unch := rep.Counts()
	if conv != 10 || unch != 2 {
		t.Errorf("counts %d converted, %d unchanged; want 10, 2", conv, unch)
	}

	rep, err = Run(context.Background(), capenv.Env{}, Request{Paths: []string{dir}, InPlace: true})
	if err != nil {
		t.Fatal(err)
	}
	wantWritten := []string{filepath.Join(dir, "clusters", "eu", "mhc.yml"), filepath.Join(dir, "clusters", "prod-1.yaml")}
	if strings.Join(rep.Written, ",") != strings.Join(wantWritten, ",") {
		t.Errorf("written %v, want %v", rep.Written, wantWritten)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "clusters", "prod-1.yaml"))
	golden := readTestdata(t, "classic-v1beta2.golden.yaml")
	if !bytes.Equal(got, golden) {
		t.Errorf("prod-1.yaml is not the golden output:\n%s", got)
	}
	if st, _ := os.Stat(filepath.Join(dir, "clusters", "prod-1.yaml")); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ".git", "old.yaml")); string(got) != mhcV1beta1 {
		t.Error("a hidden folder was converted")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "apps", "cm.yaml")); !bytes.Equal(got, plain) {
		t.Error("a non-CAPI file changed")
	}
	// A second run finds nothing to do.
	rep, err = Run(context.Background(), capenv.Env{}, Request{Paths: []string{dir}, InPlace: true})
	if err != nil || len(rep.Written) != 0 {
		t.Errorf("second run: written %v, err %v", rep.Written, err)
	}
}

// One object that cannot be converted refuses the whole run: nothing is written.
func TestRunInPlaceRefusesOnAnyError(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), []byte(mhcV1beta1), 0o644)
	bad := "apiVersion: cluster.x-k8s.io/v1beta1\nkind: MachineDeployment\nmetadata:\n  name: md\nspec:\n  replicas: ${WORKER_MACHINE_COUNT}\n"
	writeFile(t, filepath.Join(dir, "b.yaml"), []byte(bad), 0o644)
	rep, err := Run(context.Background(), capenv.Env{}, Request{Paths: []string{dir}, InPlace: true})
	var oe *ObjectsError
	if !errors.As(err, &oe) || len(oe.Failures) != 1 || !strings.Contains(oe.Failures[0], "b.yaml:1 MachineDeployment md") {
		t.Fatalf("err = %v", err)
	}
	if rep == nil || len(rep.Written) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.yaml")); string(got) != mhcV1beta1 {
		t.Error("a.yaml was written although the run was refused")
	}
}

func TestRunStdin(t *testing.T) {
	rep, err := Run(context.Background(), capenv.Env{}, Request{Paths: []string{"-"}, Stdin: strings.NewReader(mhcV1beta1)})
	if err != nil {
		t.Fatal(err)
	}
	out := string(rep.Files[0].Output)
	if !strings.Contains(out, "cluster.x-k8s.io/v1beta2") || !strings.Contains(out, "nodeStartupTimeoutSeconds: 600") {
		t.Errorf("output:\n%s", out)
	}
}

func TestRequestValidate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.yaml")
	writeFile(t, file, []byte(mhcV1beta1), 0o644)
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{ToVersion: "v1beta3"}, `--to-version "v1beta3" is not supported: the only target version is v1beta2`},
		{Request{Paths: []string{file}, InPlace: true, DryRun: true}, "exclude each other"},
		{Request{Paths: []string{"-"}, InPlace: true}, "--in-place needs files or directories"},
		{Request{Paths: []string{dir}}, "is a directory: convert it with --in-place"},
		{Request{Paths: []string{filepath.Join(dir, "missing.yaml")}}, "missing.yaml"},
		{Request{Paths: []string{file, "-"}}, "standard input cannot be combined"},
		{Request{Paths: []string{file, file}, OutputFile: "out.yaml"}, "-o/--output takes the conversion of one input"},
		{Request{Paths: []string{dir}, DryRun: true, OutputFile: "out.yaml"}, "-o/--output takes the conversion of one input"},
	} {
		err := tc.req.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.req, err, tc.want)
		}
	}
	ok := Request{Paths: []string{file}}
	if err := ok.Validate(); err != nil || ok.ToVersion != conversion.TargetVersion {
		t.Errorf("valid request: %v, to %q", err, ok.ToVersion)
	}
}

// TestRunWritesOutputFile: -o's file holds the conversion, created 0600 (a KubeadmConfig's files
// may hold secrets), and nothing is left in the report's written list (that is for --in-place).
func TestRunWritesOutputFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.yaml")
	rep, err := Run(context.Background(), capenv.Env{}, Request{Paths: []string{"-"}, Stdin: strings.NewReader(mhcV1beta1), OutputFile: out})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(rep.Files[0].Output) || !strings.Contains(string(got), "cluster.x-k8s.io/v1beta2") {
		t.Errorf("%s holds:\n%s", out, got)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v (%v), want 0600", out, st.Mode().Perm(), err)
	}
	if len(rep.Written) != 0 {
		t.Errorf("written %v, want none", rep.Written)
	}
}

// BenchmarkConvertFleet converts a fleet repository of 100 clusters (the classic set, 10 objects
// each) in a dry run and reports objects per second.
func BenchmarkConvertFleet(b *testing.B) {
	classic, err := os.ReadFile(filepath.Join("testdata", "classic-v1beta1.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	for i := 0; i < 100; i++ {
		if err := os.WriteFile(filepath.Join(dir, "cluster-"+strconv.Itoa(i)+".yaml"), classic, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	objects := 0
	for i := 0; i < b.N; i++ {
		rep, err := Run(context.Background(), capenv.Env{}, Request{Paths: []string{dir}, DryRun: true})
		if err != nil {
			b.Fatal(err)
		}
		c, u := rep.Counts()
		objects += c + u
	}
	b.ReportMetric(float64(objects)/b.Elapsed().Seconds(), "objects/s")
}
