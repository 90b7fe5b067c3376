package repository

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/provider"
)

// TestGitLabPackageRepository serves a GitLab generic package (components + metadata of the fixture's
// CAPD v1.14.0) from an httptest server that every host name resolves to.
func TestGitLabPackageRepository(t *testing.T) {
	repo := fixtureRepo(t)
	var requests atomic.Int64
	var auth atomic.Value
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		auth.Store(r.Header.Get("Authorization"))
		const prefix = "/api/v4/projects/acme%2Finfra/packages/generic/capd/"
		if !strings.HasPrefix(r.URL.EscapedPath(), prefix) {
			http.NotFound(w, r)
			return
		}
		rest := strings.TrimPrefix(r.URL.EscapedPath(), prefix)
		switch rest {
		case "v1.14.0/infrastructure-components.yaml", "v1.14.0/metadata.yaml":
			http.ServeFile(w, r, repo+"/infrastructure-docker/"+rest)
		case "v1.14.0/secret.yaml":
			http.Error(w, "401 Unauthorized", http.StatusUnauthorized)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	// Every host is the test server, whose certificate is for example.com.
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.ServerName = "example.com"
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	hc := &http.Client{Transport: tr}
	cfg := loadConfig(t, `providers:
- name: docker
  type: InfrastructureProvider
  url: https://gitlab.example.test/api/v4/projects/acme%2Finfra/packages/generic/capd/v1.14.0/infrastructure-components.yaml
`, map[string]string{"GITLAB_ACCESS_TOKEN": "glpat-secret"})
	opts := Options{HTTPClient: hc, GoProxy: "off"}
	c := newTestClient(t, cfg, opts)
	p, _ := c.Provider("docker", provider.InfrastructureProviderType)
	ctx := context.Background()
	comp, err := c.Components(ctx, p, ComponentsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if comp.Version != "v1.14.0" || comp.TargetNamespace != "capd-system" || len(comp.Objects) < 20 {
		t.Errorf("%s %s %d", comp.Version, comp.TargetNamespace, len(comp.Objects))
	}
	if auth.Load() != "Bearer glpat-secret" {
		t.Errorf("token not sent: %v", auth.Load())
	}
	if vs, err := c.Versions(ctx, p); err != nil || len(vs) != 1 || vs[0] != "v1.14.0" {
		t.Errorf("versions: %v %v", vs, err)
	}
	_, err = c.Resolve(ctx, p, "v1.13.0", ResolveOptions{})
	var nf *VersionNotFoundError
	if !errors.As(err, &nf) || nf.Nearest[0] != "v1.14.0" {
		t.Errorf("missing version: %v", err)
	}
	if _, err := c.GetFile(ctx, p, "v1.14.0", "secret.yaml"); err == nil || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("401: %v", err)
	}
	// A second run with the same cache needs no request.
	before := requests.Load()
	opts.CacheDir = c.cache.dir
	c2 := newTestClient(t, cfg, opts)
	if _, err := c2.Components(ctx, p, ComponentsOptions{}); err != nil || requests.Load() != before {
		t.Errorf("cached rerun: %v, %d requests", err, requests.Load()-before)
	}
	// A plain-HTTP GitLab URL gets no token (and stderr says why).
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		http.NotFound(w, r)
	}))
	defer plain.Close()
	cfg = loadConfig(t, "providers:\n- name: docker\n  type: InfrastructureProvider\n  url: http://gitlab.example.test/api/v4/projects/acme%2Finfra/packages/generic/capd/v1.14.0/infrastructure-components.yaml\n",
		map[string]string{"GITLAB_ACCESS_TOKEN": "glpat-secret"})
	var logs bytes.Buffer
	plainClient := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, plain.Listener.Addr().String())
	}}}
	c = newTestClient(t, cfg, Options{HTTPClient: plainClient, GoProxy: "off", Logger: logging.New(&logs, 0)})
	p, _ = c.Provider("docker", provider.InfrastructureProviderType)
	auth.Store("none yet")
	if _, err := c.Resolve(ctx, p, "", ResolveOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("plain HTTP GitLab: %v", err)
	}
	if got := auth.Load(); got != "" {
		t.Errorf("GITLAB_ACCESS_TOKEN went over plain HTTP: %q", got)
	}
	if !strings.Contains(logs.String(), "GITLAB_ACCESS_TOKEN is not sent") || strings.Contains(logs.String(), "glpat-secret") {
		t.Errorf("stderr: %s", logs.String())
	}
	for _, bad := range []string{
		"https://gitlab.example.test/api/v4/projects/x/packages/generic/p/v1/extra/f.yaml",
		"https://gitlab.example.test/api/v4/projects/x/packages/npm/p/v1/f.yaml",
		"https://gitlab.example.test/api/v4/projects/../packages/generic/p/v1/f.yaml",
	} {
		if _, err := parseLocation(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
