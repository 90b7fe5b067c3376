package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// repoTestConfig writes a clusterctl.yaml pointing the CAPI providers and cert-manager at the
// fixture repository, and isolates the cache and config folders of the test.
func repoTestConfig(t *testing.T, extra string) string {
	t.Helper()
	repo := filepath.Join(testenv.FixturesDir(t), "repository")
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	body := `providers:
- name: cluster-api
  type: CoreProvider
  url: ` + repo + `/cluster-api/latest/core-components.yaml
- name: kubeadm
  type: BootstrapProvider
  url: ` + repo + `/bootstrap-kubeadm/latest/bootstrap-components.yaml
- name: kubeadm
  type: ControlPlaneProvider
  url: ` + repo + `/control-plane-kubeadm/latest/control-plane-components.yaml
- name: docker
  type: InfrastructureProvider
  url: ` + repo + `/infrastructure-docker/latest/infrastructure-components.yaml
cert-manager:
  url: ` + repo + `/cert-manager/latest/cert-manager-crds.yaml
  version: v1.21.1
` + extra
	p := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigRepositories(t *testing.T) {
	cfg := repoTestConfig(t, "")
	out, errOut, code := runCapctl(t, "config", "repositories", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "NAME TYPE URL FILE" {
		t.Errorf("header %q", lines[0])
	}
	if len(lines) != 67 {
		t.Errorf("want 66 providers + header, got %d lines", len(lines))
	}
	if f := strings.Fields(lines[1]); f[0] != "cluster-api" || f[1] != "CoreProvider" || !strings.HasSuffix(f[2], "/cluster-api/latest/") || f[3] != "core-components.yaml" {
		t.Errorf("first row %q", lines[1])
	}
	if !strings.Contains(out, "infrastructure-components.yaml") || strings.Contains(out, "infrastructure-components-development.yaml") {
		t.Error("the config's docker entry should replace the built-in one")
	}
	out, _, code = runCapctl(t, "config", "repositories", "--config", cfg, "-o", "yaml")
	var rows []map[string]string
	if code != 0 || yaml.Unmarshal([]byte(out), &rows) != nil || len(rows) != 66 || rows[0]["ProviderType"] != "CoreProvider" {
		t.Errorf("yaml: %d %v", code, rows[:1])
	}
	out, _, code = runCapctl(t, "config", "repositories", "--config", cfg, "-o", "json")
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || rows[len(rows)-1]["ProviderType"] != "AddonProvider" {
		t.Errorf("json: %d", code)
	}
	_, errOut, code = runCapctl(t, "config", "repositories", "-o", "xml")
	if code == 0 || !strings.Contains(errOut, "invalid output format") {
		t.Errorf("xml: %d %s", code, errOut)
	}
}

func TestRepositoryMirror(t *testing.T) {
	cfg := repoTestConfig(t, "")
	to := filepath.Join(t.TempDir(), "mirror")
	out, errOut, code := runCapctl(t, "repository", "mirror", "--config", cfg, "--offline", "--to", to,
		"infrastructure-docker:v1.13.5", "cluster-api")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, f := range []string{
		"infrastructure-docker/v1.13.5/infrastructure-components.yaml", "infrastructure-docker/v1.13.5/metadata.yaml",
		"infrastructure-docker/v1.13.5/cluster-template-development.yaml", "infrastructure-docker/v1.13.5/clusterclass-quick-start.yaml",
		"cluster-api/v1.14.0/core-components.yaml", "cert-manager/v1.21.1/cert-manager-crds.yaml",
	} {
		if _, err := os.Stat(filepath.Join(to, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if !strings.Contains(errOut, "Mirroring infrastructure-docker v1.13.5") {
		t.Errorf("progress: %s", errOut)
	}
	// stdout is a config fragment; using it, the mirror serves the providers.
	var frag map[string]any
	if err := yaml.Unmarshal([]byte(out), &frag); err != nil || frag["providers"] == nil || frag["cert-manager"] == nil {
		t.Fatalf("fragment: %v\n%s", err, out)
	}
	mcfg := filepath.Join(t.TempDir(), "mirror.yaml")
	if err := os.WriteFile(mcfg, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCapctl(t, "config", "repositories", "--config", mcfg)
	if code != 0 || !strings.Contains(out, to+"/infrastructure-docker/latest/") {
		t.Errorf("mirror config: %d %s %s", code, out, errOut)
	}

	for _, bad := range [][]string{
		{"repository", "mirror", "cluster-api"},
		{"repository", "mirror", "--to", to, "docker"},
		{"repository", "mirror", "--to", to, "infrastructure-docker:"},
		{"repository", "mirror", "--to", to, "infrastructure-docker:1.2.x"},
		{"repository", "mirror", "--to", mcfg, "cluster-api"},
		{"repository", "mirror", "--to", "", "cluster-api"},
	} {
		if _, errOut, code := runCapctl(t, append(bad, "--config", cfg)...); code == 0 || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: want a usage error, got %d %s", bad, code, errOut)
		}
	}
	_, errOut, code = runCapctl(t, "repository", "mirror", "--config", cfg, "--offline", "--to", to, "infrastructure-dokcer")
	if code == 0 || !strings.Contains(errOut, "docker") {
		t.Errorf("unknown provider: %s", errOut)
	}
}
