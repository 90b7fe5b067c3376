package main

import (
	"context"
	"os"

	"github.com/capctl/capctl/pkg/repository"
)

// Environment variables that point capctl at another GitHub (GitHub Enterprise, a test server).
const (
	envGitHubAPIURL      = "CAPCTL_GITHUB_API_URL"
	envGitHubDownloadURL = "CAPCTL_GITHUB_DOWNLOAD_URL"
)

// repositoryClient builds the provider repository client for this run from the config file.
// offline forbids all network access (local repositories, overrides and the cache only).
func (f *factory) repositoryClient(ctx context.Context, offline bool) (*repository.Client, error) {
	cfg, err := f.Config(ctx)
	if err != nil {
		return nil, err
	}
	return repository.New(cfg, repository.Options{
		GitHubAPIURL:      os.Getenv(envGitHubAPIURL),
		GitHubDownloadURL: os.Getenv(envGitHubDownloadURL),
		Offline:           offline,
		Logger:            f.Logger(),
	})
}
