package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/pkg/convert"
)

func TestConvertOptions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte(mhcDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		want    ConvertOptions
		wantErr string
	}{
		{args: []string{file}, want: ConvertOptions{Request: convert.Request{Paths: []string{file}, ToVersion: "v1beta2"}}},
		{args: []string{dir, "--in-place"}, want: ConvertOptions{Request: convert.Request{Paths: []string{dir}, ToVersion: "v1beta2", InPlace: true}}},
		{args: []string{dir, "--dry-run"}, want: ConvertOptions{Request: convert.Request{Paths: []string{dir}, ToVersion: "v1beta2", DryRun: true}}},
		{args: []string{"-", "-o", "out.yaml"}, want: ConvertOptions{Request: convert.Request{Paths: []string{"-"}, ToVersion: "v1beta2", OutputFile: "out.yaml"}}},
		{args: []string{}, want: ConvertOptions{Request: convert.Request{ToVersion: "v1beta2"}}},
		{args: []string{file, "--to-version", "v1beta1"}, wantErr: `--to-version "v1beta1" is not supported`},
		{args: []string{dir}, wantErr: "is a directory: convert it with --in-place"},
		{args: []string{file, "--in-place", "-o", "x"}, wantErr: "[in-place output] were all set"},
		{args: []string{file, file, "-o", "x"}, wantErr: "takes the conversion of one input"},
	} {
		var got *ConvertOptions
		err := executeCmd(func(f *factory) *cobra.Command {
			return newCmdConvert(f, func(o *ConvertOptions) error { got = o; return nil })
		}, tc.args...)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		got.IO = nil
		if got.OutputFile != tc.want.OutputFile || got.InPlace != tc.want.InPlace || got.DryRun != tc.want.DryRun ||
			got.ToVersion != tc.want.ToVersion || strings.Join(got.Paths, ",") != strings.Join(tc.want.Paths, ",") {
			t.Errorf("%v: options %+v, want %+v", tc.args, *got, tc.want)
		}
	}
}

const mhcDoc = "apiVersion: cluster.x-k8s.io/v1beta1\nkind: MachineDeployment\nmetadata:\n  name: md\n  namespace: a\nspec:\n  clusterName: c\n  progressDeadlineSeconds: 600\n  selector: {}\n  template:\n    spec:\n      clusterName: c\n      bootstrap:\n        configRef:\n          apiVersion: bootstrap.cluster.x-k8s.io/v1beta1\n          kind: KubeadmConfigTemplate\n          name: md\n"

func TestConvertCommand(t *testing.T) {
	out, errOut, code := runCapctlWithInput(t, mhcDoc, "convert")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "apiVersion: cluster.x-k8s.io/v1beta2") || !strings.Contains(out, "apiGroup: bootstrap.cluster.x-k8s.io") {
		t.Errorf("stdout:\n%s", out)
	}
	if !strings.Contains(errOut, "Warning: MachineDeployment a/md (line 1): spec.progressDeadlineSeconds: 600 has no place in v1beta2") ||
		!strings.Contains(errOut, "Converted 1 resource(s) to v1beta2. 0 resource(s) passed through unchanged. 1 warning(s).") {
		t.Errorf("stderr:\n%s", errOut)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "md.yaml")
	if err := os.WriteFile(file, []byte(mhcDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCapctl(t, "convert", dir, "--dry-run")
	if code != 0 || !strings.Contains(out, "FILE") || !strings.Contains(out, file+":1") || !strings.Contains(out, "v1beta1 → v1beta2") ||
		!strings.Contains(errOut, "Would convert 1 resource(s)") {
		t.Errorf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != mhcDoc {
		t.Error("dry run wrote the file")
	}
	_, errOut, code = runCapctl(t, "convert", dir, "--in-place")
	if b, _ := os.ReadFile(file); code != 0 || !strings.Contains(string(b), "v1beta2") || !strings.Contains(errOut, "Rewrote 1 file(s).") {
		t.Errorf("in place: exit %d %s\n%s", code, errOut, b)
	}
	target := filepath.Join(dir, "out.yaml")
	_, errOut, code = runCapctlWithInput(t, mhcDoc, "convert", "-", "-o", target)
	if st, err := os.Stat(target); code != 0 || err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("-o: exit %d %s %v", code, errOut, err)
	}
}

// executeCmd builds a command with a factory on test streams and runs it with args (tests of
// options pass a runF that captures them, so nothing runs).
func executeCmd(build func(*factory) *cobra.Command, args ...string) error {
	io, _, _, _ := iostreams.Test()
	cmd := build(newFactory(io))
	cmd.SetArgs(args)
	cmd.SetOut(io.Out)
	cmd.SetErr(io.ErrOut)
	return cmd.Execute()
}
