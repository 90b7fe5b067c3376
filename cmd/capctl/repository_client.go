package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/capctl/capctl/pkg/repository"
)

// Environment variables that point capctl at another GitHub (GitHub Enterprise, a test server).
const (
	envGitHubAPIURL      = "CAPCTL_GITHUB_API_URL"
	envGitHubDownloadURL = "CAPCTL_GITHUB_DOWNLOAD_URL"
	// envVersionsTTL (environment or config file) is how long a cached version list is trusted
	// when resolving "latest" (Go duration; default 10m; 0 = always ask).
	envVersionsTTL = "CAPCTL_VERSIONS_TTL"
)

// repositoryClient builds the provider repository client for this run from the config file.
// offline forbids all network access (local repositories, overrides and the cache only).
func (f *factory) repositoryClient(ctx context.Context, offline bool) (*repository.Client, error) {
	cfg, err := f.Config(ctx)
	if err != nil {
		return nil, err
	}
	opts := repository.Options{
		GitHubAPIURL:      os.Getenv(envGitHubAPIURL),
		GitHubDownloadURL: os.Getenv(envGitHubDownloadURL),
		// GoProxy stays empty: versions are listed through the proxy GOPROXY names (no GitHub API
		// quota), as clusterctl does.
		Offline: offline,
		Logger:  f.Logger(),
	}
	if v, ok := cfg.Lookup(envVersionsTTL); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not a duration like 10m: %w", envVersionsTTL, v, err)
		}
		if d == 0 {
			d = -1 // zero means "do not trust a cached list"
		}
		opts.VersionsTTL = d
	}
	return repository.New(cfg, opts)
}
