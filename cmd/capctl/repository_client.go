package main

import (
	"context"

	"github.com/capctl/capctl/pkg/repository"
)

// repositoryClient builds the provider repository client for this run from the config file (and
// the environment settings pkg/config resolves). offline forbids all network access (local
// repositories, overrides and the cache only).
func (f *factory) repositoryClient(ctx context.Context, offline bool) (*repository.Client, error) {
	if err := f.guard("the provider repositories"); err != nil {
		return nil, err
	}
	cfg, err := f.Config(ctx)
	if err != nil {
		return nil, err
	}
	s, err := cfg.RepositorySettings()
	if err != nil {
		return nil, err
	}
	return repository.New(cfg, repository.Options{
		GitHubAPIURL:      s.GitHubAPIURL,
		GitHubDownloadURL: s.GitHubDownloadURL,
		VersionsTTL:       s.VersionsTTL,
		// GoProxy stays empty: versions are listed through the proxy GOPROXY names (no GitHub API
		// quota), as clusterctl does.
		Offline: offline,
		Logger:  f.Logger(),
	})
}
