package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/provider"
)

func TestRepositoryCacheCleanOptions(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    *MirrorRef
		wantErr string
	}{
		{args: nil},
		{args: []string{"infrastructure-docker:v1.14.0"}, want: &MirrorRef{Label: "infrastructure-docker", Name: "docker", Version: "v1.14.0", Type: provider.InfrastructureProviderType}},
		{args: []string{"cluster-api"}, want: &MirrorRef{Label: "cluster-api", Name: "cluster-api", Type: provider.CoreProviderType}},
		{args: []string{"docker"}, wantErr: "not a provider label"},
		{args: []string{"cluster-api:latest"}, wantErr: "must look like v1.2.3"},
		{args: []string{"cluster-api:"}, wantErr: "must look like v1.2.3"},
		{args: []string{"a", "b"}, wantErr: "accepts at most 1 arg"},
	} {
		io, _, _, _ := iostreams.Test()
		var got *RepositoryCacheCleanOptions
		cmd := newCmdRepositoryCacheClean(newFactory(io), func(o *RepositoryCacheCleanOptions) error { got = o; return nil })
		cmd.SetArgs(append(tc.args, "-o", "json"))
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		err := cmd.Execute()
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
		if got.Output != output.JSON {
			t.Errorf("%v: output %q", tc.args, got.Output)
		}
		if (got.Provider == nil) != (tc.want == nil) || (tc.want != nil && *got.Provider != *tc.want) {
			t.Errorf("%v: provider %+v, want %+v", tc.args, got.Provider, tc.want)
		}
	}
}

func TestRepositoryCacheClean(t *testing.T) {
	cfg := repoTestConfig(t, "")
	dir := filepath.Join(os.Getenv("XDG_CACHE_HOME"), "capctl", "repositories", "files", "github", "acme", "widget", "v1.0.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "metadata.yaml"), []byte("<html>login</html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgWithWidget := filepath.Join(t.TempDir(), "clusterctl.yaml")
	if err := os.WriteFile(cfgWithWidget, []byte("providers:\n- name: widget\n  type: InfrastructureProvider\n  url: https://github.com/acme/widget/releases/latest/infrastructure-components.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCapctl(t, "repository", "cache", "clean", "infrastructure-widget:v1.0.0", "--config", cfgWithWidget)
	if code != 0 || !strings.Contains(out, "Removed 1 cached files") {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("still there: %v", err)
	}
	out, _, code = runCapctl(t, "repository", "cache", "clean", "infrastructure-docker", "--config", cfg)
	if code != 0 || !strings.Contains(out, "local repository") {
		t.Errorf("local: %d %s", code, out)
	}
	out, _, _ = runCapctl(t, "repository", "cache", "--help")
	if !strings.Contains(out, filepath.Join(os.Getenv("XDG_CACHE_HOME"), "capctl", "repositories")) {
		t.Errorf("help does not name the cache:\n%s", out)
	}
}
