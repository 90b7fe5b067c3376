package main

import (
	"context"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

// cacheLocation names the download cache in help texts.
func cacheLocation() string {
	return filepath.Join(config.CacheDir(), "repositories") + " ($XDG_CACHE_HOME/capctl/repositories)"
}

func newRepositoryCacheCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Work with the cache of downloaded provider files",
		Long: `Provider files downloaded from GitHub or GitLab (components, metadata.yaml, templates) and
version lists are cached in ` + cacheLocation() + `.
Files are checked before they are cached; a cached file that does not parse is fetched again.`,
	}
	cmd.AddCommand(newCmdRepositoryCacheClean(f, nil))
	return cmd
}

// RepositoryCacheCleanOptions are `capctl repository cache clean`'s inputs.
type RepositoryCacheCleanOptions struct {
	// Provider is nil for the whole cache.
	Provider *MirrorRef
	Output   output.Format

	deps
}

func newCmdRepositoryCacheClean(f *factory, runF func(*RepositoryCacheCleanOptions) error) *cobra.Command {
	o := &RepositoryCacheCleanOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "clean [PROVIDER-LABEL[:VERSION]]",
		Short: "Remove cached provider files (one version, one provider, or everything)",
		Long: `Remove cached provider files from ` + cacheLocation() + `,
so that they are downloaded again when next needed.

With PROVIDER-LABEL:VERSION (infrastructure-docker:v1.14.0) that version's cached files go; with
a label alone, every version and the version list of that provider's repository; with no
argument, the whole cache. The cache is kept by repository: providers that share one (the
Cluster API core, kubeadm and docker providers) lose their cached files together, and the
output names them. Local repositories are never cached.`,
		Example: `  capctl repository cache clean infrastructure-aws:v2.8.1
  capctl repository cache clean cluster-api
  capctl repository cache clean`,
		Args: cobra.MaximumNArgs(1),
		RunE: leafRun(o, o.complete, runF, runRepositoryCacheClean),
	}
	addFormatFlag(cmd, &o.Output, "json and yaml print what was removed")
	return cmd
}

// complete parses the provider label, if one is given (a cached version is never "latest").
func (o *RepositoryCacheCleanOptions) complete(args []string) error {
	if len(args) == 0 {
		return nil
	}
	ref, err := provider.ParseLabelReference(args[0], false)
	if err != nil {
		return usageError{err}
	}
	o.Provider = &ref
	return nil
}

// runRepositoryCacheClean makes the one CleanCache call (offline: cleaning needs no network).
func runRepositoryCacheClean(ctx context.Context, o *RepositoryCacheCleanOptions) error {
	c, err := o.Repository(ctx, true)
	if err != nil {
		return err
	}
	var p *repository.Provider
	version := ""
	if o.Provider != nil {
		rp, err := c.Provider(o.Provider.Name, o.Provider.Type)
		if err != nil {
			return err
		}
		p, version = &rp, o.Provider.Version
	}
	res, err := c.CleanCache(p, version)
	if err != nil {
		return err
	}
	label := ""
	if o.Provider != nil {
		label = o.Provider.Label
	}
	return res.Render(o.IO.Out, o.Output, label, version)
}
