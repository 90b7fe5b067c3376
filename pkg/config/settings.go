package config

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// capctl's own settings (not template variables): the environment, or for those read through a
// loaded Config also a top-level key of the config file, with Get's precedence. Commands never
// read the environment themselves; they ask here.
const (
	// GitHubAPIURLKey points capctl at another GitHub REST API (GitHub Enterprise, a test server).
	GitHubAPIURLKey = "CAPCTL_GITHUB_API_URL"
	// GitHubDownloadURLKey is where release assets are downloaded from instead of github.com.
	GitHubDownloadURLKey = "CAPCTL_GITHUB_DOWNLOAD_URL"
	// GitHubRawURLKey is where raw repository files (templates by URL) are read instead of
	// raw.githubusercontent.com.
	GitHubRawURLKey = "CAPCTL_GITHUB_RAW_URL"
	// VersionsTTLKey is how long a cached version list is trusted when resolving "latest" (a Go
	// duration; default 10m; 0 = always ask).
	VersionsTTLKey = "CAPCTL_VERSIONS_TTL"
	// LogLevelKey (or clusterctl's ClusterctlLogLevelKey) raises the log verbosity when -v is 0.
	LogLevelKey           = "CAPCTL_LOG_LEVEL"
	ClusterctlLogLevelKey = "CLUSTERCTL_LOG_LEVEL"
)

// RepositorySettings are the settings of the provider repository client.
type RepositorySettings struct {
	GitHubAPIURL      string
	GitHubDownloadURL string
	// VersionsTTL is zero when not set (the client's default) and negative for "never trust a
	// cached list" (the user's 0).
	VersionsTTL time.Duration
}

// RepositorySettings resolves the repository client's settings.
func (c *Config) RepositorySettings() (RepositorySettings, error) {
	var s RepositorySettings
	s.GitHubAPIURL, _ = c.Lookup(GitHubAPIURLKey)
	s.GitHubDownloadURL, _ = c.Lookup(GitHubDownloadURLKey)
	if v, ok := c.Lookup(VersionsTTLKey); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return s, fmt.Errorf("%s %q is not a duration like 10m: %w", VersionsTTLKey, v, err)
		}
		if d == 0 {
			d = -1 // zero means "do not trust a cached list"
		}
		s.VersionsTTL = d
	}
	return s, nil
}

// EnvLogLevel is the log level CAPCTL_LOG_LEVEL (else CLUSTERCTL_LOG_LEVEL) asks for, read from
// the environment (lookup; nil: the process's) because logging starts before any config file is
// read. The first of the two that is set decides; a value that is not a number is ignored.
func EnvLogLevel(lookup func(string) (string, bool)) (int, bool) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	for _, key := range []string{LogLevelKey, ClusterctlLogLevelKey} {
		if s, ok := lookup(key); ok {
			n, err := strconv.Atoi(s)
			return n, err == nil
		}
	}
	return 0, false
}
