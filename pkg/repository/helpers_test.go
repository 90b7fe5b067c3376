package repository

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/config"
)

// fixtureRepo is the upstream local repository shared by the team.
func fixtureRepo(t testing.TB) string {
	t.Helper()
	return filepath.Join(testenv.FixturesDir(t), "repository")
}

// loadConfig writes body as a clusterctl.yaml (with an empty overrides folder unless body sets one)
// and loads it with an environment made of env only.
func loadConfig(t testing.TB, body string, env map[string]string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	if !strings.Contains(body, "overridesFolder:") {
		body += "\noverridesFolder: " + filepath.Join(dir, "overrides") + "\n"
	}
	p := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(context.Background(), config.Options{Path: p, LookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// fixtureConfig points the four CAPI providers at the fixture repository, with "latest" URLs.
func fixtureConfig(t testing.TB, extra string) *config.Config {
	t.Helper()
	repo := fixtureRepo(t)
	body := `providers:
- name: cluster-api
  type: CoreProvider
  url: ` + repo + `/cluster-api/latest/core-components.yaml
- name: kubeadm
  type: BootstrapProvider
  url: ` + repo + `/bootstrap-kubeadm/latest/bootstrap-components.yaml
- name: kubeadm
  type: ControlPlaneProvider
  url: file://` + repo + `/control-plane-kubeadm/latest/control-plane-components.yaml
- name: docker
  type: InfrastructureProvider
  url: ` + repo + `/infrastructure-docker/latest/infrastructure-components.yaml
cert-manager:
  url: ` + repo + `/cert-manager/latest/cert-manager-crds.yaml
  version: v1.21.1
` + extra
	return loadConfig(t, body, map[string]string{})
}

func newTestClient(t testing.TB, cfg *config.Config, opts Options) *Client {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = filepath.Join(t.TempDir(), "cache")
	}
	c, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func writeTestFile(t testing.TB, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
