package config

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/userinputtest"
	"github.com/capctl/capctl/internal/userinput"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clusterctl.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func envFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestPrecedenceSetThenEnvThenFile(t *testing.T) {
	p := writeFile(t, "AWS_REGION: eu-west-1\nFROM_FILE: file\nEMPTY_IN_ENV: file\n")
	c, err := Load(context.Background(), Options{Path: p, LookupEnv: envFrom(map[string]string{
		"AWS_REGION": "us-east-1", "EMPTY_IN_ENV": "",
	})})
	if err != nil {
		t.Fatal(err)
	}
	check := func(key, want string) {
		t.Helper()
		got, err := c.Get(key)
		if err != nil || got != want {
			t.Errorf("Get(%s) = %q, %v; want %q", key, got, err, want)
		}
	}
	check("AWS_REGION", "us-east-1")
	check("FROM_FILE", "file")
	check("EMPTY_IN_ENV", "") // an empty env value counts as set, as in clusterctl
	c.Set("AWS_REGION", "set-by-capctl")
	check("AWS_REGION", "set-by-capctl")
	if _, err := c.Get("NOPE"); err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Errorf("unset variable error should name it: %v", err)
	}
}

func TestMalformedYAMLNamesFileAndLine(t *testing.T) {
	p := writeFile(t, "providers:\n  - name: aws\n    url: [unclosed\n")
	_, err := Load(context.Background(), Options{Path: p, LookupEnv: envFrom(nil)})
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line") {
		t.Fatalf("want an error naming %s and the line, got %v", p, err)
	}
}

// TestMalformedYAMLReportsTheRealLine: a bad indent on line 4 is reported at line 4, not at the
// line where the enclosing mapping starts.
func TestMalformedYAMLReportsTheRealLine(t *testing.T) {
	for _, tc := range []struct {
		body string
		line string
	}{
		{"providers:\n  - name: foo\n    type: InfrastructureProvider\n   url: https://example.com/x.yaml\n", "line 4"},
		{"images:\n  all:\n    repository: example.com\n  cert-manager:\n      tag: v1\n    name: x\n", "line 6"},
		{"a: 1\nb: 2\nc: [unclosed\n", "line 3"},
	} {
		p := writeFile(t, tc.body)
		_, err := Load(context.Background(), Options{Path: p, LookupEnv: envFrom(nil)})
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.line+":") {
			t.Errorf("%q: want an error naming %s and %s, got %v", tc.body, p, tc.line, err)
		}
	}
}

func TestMissingConfigFile(t *testing.T) {
	_, err := Load(context.Background(), Options{Path: "/nonexistent/clusterctl.yaml"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/clusterctl.yaml") {
		t.Fatalf("got %v", err)
	}
}

func TestProvidersImagesCertManager(t *testing.T) {
	p := writeFile(t, `
providers:
  - name: my-infra
    url: ${REPO}/infrastructure-my-infra/latest/infrastructure-components.yaml
    type: InfrastructureProvider
images:
  all:
    repository: myorg.io/local
  cert-manager/cert-manager-cainjector:
    tag: v1.0.0
cert-manager:
  version: v1.20.3
  timeout: 2m
overridesFolder: ${REPO}/overrides
GITHUB_TOKEN: ghp_secret
`)
	c, err := Load(context.Background(), Options{Path: p, LookupEnv: envFrom(map[string]string{"REPO": "/repo"})})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := c.Providers()
	if err != nil || len(ps) != 1 || ps[0].URL != "/repo/infrastructure-my-infra/latest/infrastructure-components.yaml" {
		t.Fatalf("providers: %+v %v", ps, err)
	}
	imgs, err := c.Images()
	if err != nil || imgs["all"].Repository != "myorg.io/local" || imgs["cert-manager/cert-manager-cainjector"].Tag != "v1.0.0" {
		t.Fatalf("images: %+v %v", imgs, err)
	}
	cm, err := c.CertManager()
	if err != nil || cm.Version != "v1.20.3" || cm.Timeout != 2*time.Minute || !strings.Contains(cm.URL, "v1.20.3") {
		t.Fatalf("cert-manager: %+v %v", cm, err)
	}
	if c.OverridesFolder() != "/repo/overrides" {
		t.Errorf("overrides folder %q", c.OverridesFolder())
	}
	if c.GitHubToken() != "ghp_secret" {
		t.Error("token from file not read")
	}
	if v := c.Variables()["GITHUB_TOKEN"]; v == "ghp_secret" {
		t.Error("a token was listed unredacted")
	}
}

func TestBadProviderEntry(t *testing.T) {
	p := writeFile(t, "providers:\n  - name: Foo\n    url: x\n    type: InfrastructureProvider\n")
	c, err := Load(context.Background(), Options{Path: p, LookupEnv: envFrom(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Providers(); err == nil || !strings.Contains(err.Error(), "Foo") {
		t.Fatalf("want an error naming the provider, got %v", err)
	}
}

func TestConfigFromURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/clusterctl.yaml" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("FOO: bar\n"))
	}))
	defer srv.Close()
	c, err := Load(context.Background(), Options{Path: srv.URL + "/clusterctl.yaml", LookupEnv: envFrom(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get("FOO"); v != "bar" {
		t.Errorf("FOO = %q", v)
	}
	if _, err := Load(context.Background(), Options{Path: srv.URL + "/missing.yaml"}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("want a 404 error, got %v", err)
	}
}

// TestWrongTypesAreNamedWithoutGoTypes: a field of the wrong type is named by its path in the
// file and what it should be, never by Go types.
func TestWrongTypesAreNamedWithoutGoTypes(t *testing.T) {
	for body, want := range map[string]string{
		"providers:\n- name: foo\n  type: [a]\n  url: x\n": "providers[0].type must be a string, not a list",
		"images:\n  all: 3\n":                              "images.all must be a mapping, not a whole number",
		"images:\n  all:\n    tag: [1]\n":                  "images.all.tag must be a string, not a list",
	} {
		c, err := Load(context.Background(), Options{Path: writeFile(t, body), LookupEnv: envFrom(nil)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Providers()
		if err == nil {
			_, err = c.Images()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "interface") || strings.Contains(err.Error(), "unconvertible")) {
			t.Errorf("%q: Go types in %v", body, err)
		}
	}
}

// TestEndlessConfigFileIsBounded: a config file that is an endless stream is read up to the input
// bound and refused, naming the file and the flag that raises the bound.
func TestEndlessConfigFileIsBounded(t *testing.T) {
	defer userinput.SetMax(userinput.SetMax(1 << 20))
	p := filepath.Join(t.TempDir(), "clusterctl.yaml")
	userinputtest.DevZeroAt(t, p)
	_, err := Load(context.Background(), Options{Path: p})
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "larger than 1Mi") || !strings.Contains(err.Error(), "--max-input-size") {
		t.Fatalf("config file that is /dev/zero: %v, want a refusal naming it, the bound and --max-input-size", err)
	}
}

// TestConfigFileExtensionsStillRead: files named .yml and .json, and one without an extension,
// are read as before the bounded read.
func TestConfigFileExtensionsStillRead(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"clusterctl.yml":  "FOO: yml\n",
		"clusterctl.json": `{"FOO": "json"}`,
		"clusterctl":      "FOO: none\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(context.Background(), Options{Path: p, LookupEnv: func(string) (string, bool) { return "", false }})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if v, err := c.Get("FOO"); err != nil || v == "" {
			t.Errorf("%s: FOO = %q, %v", name, v, err)
		}
	}
}
