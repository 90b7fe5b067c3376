package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRepositorySettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "clusterctl.yaml")
	if err := os.WriteFile(file, []byte("CAPCTL_VERSIONS_TTL: 0\nCAPCTL_GITHUB_DOWNLOAD_URL: https://dl.example\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CAPCTL_GITHUB_API_URL": "https://ghe.example/api/v3/"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := Load(context.Background(), Options{Path: file, LookupEnv: lookup})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.RepositorySettings()
	want := RepositorySettings{GitHubAPIURL: "https://ghe.example/api/v3/", GitHubDownloadURL: "https://dl.example", VersionsTTL: -1}
	if err != nil || s != want {
		t.Errorf("got %+v %v, want %+v", s, err, want)
	}
	env["CAPCTL_VERSIONS_TTL"] = "90s"
	if s, _ := c.RepositorySettings(); s.VersionsTTL != 90*time.Second {
		t.Errorf("env beats file: %v", s.VersionsTTL)
	}
	env["CAPCTL_VERSIONS_TTL"] = "soon"
	if _, err := c.RepositorySettings(); err == nil || !strings.Contains(err.Error(), `CAPCTL_VERSIONS_TTL "soon" is not a duration`) {
		t.Errorf("bad TTL: %v", err)
	}
}

func TestEnvLogLevel(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want int
		ok   bool
	}{
		{map[string]string{}, 0, false},
		{map[string]string{"CLUSTERCTL_LOG_LEVEL": "3"}, 3, true},
		{map[string]string{"CAPCTL_LOG_LEVEL": "2", "CLUSTERCTL_LOG_LEVEL": "5"}, 2, true},
		{map[string]string{"CAPCTL_LOG_LEVEL": "loud", "CLUSTERCTL_LOG_LEVEL": "5"}, 0, false},
	} {
		n, ok := EnvLogLevel(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if n != tc.want || ok != tc.ok {
			t.Errorf("%v: got %d %v", tc.env, n, ok)
		}
	}
}
