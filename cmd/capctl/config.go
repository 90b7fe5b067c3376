package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/repository"
)

func newCmdConfig(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "config",
		Short:   "Display provider configuration",
	}
	cmd.AddCommand(newCmdConfigRepositories(f, nil))
	return cmd
}

// ConfigRepositoriesOptions is `capctl config repositories` parsed from its flags.
type ConfigRepositoriesOptions struct {
	deps
	Output output.Format
}

// newCmdConfigRepositories builds `capctl config repositories`; runF, when set, replaces running it.
func newCmdConfigRepositories(f *factory, runF func(*ConfigRepositoriesOptions) error) *cobra.Command {
	o := &ConfigRepositoriesOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "repositories",
		Short: "List the provider repositories capctl knows (built-in and from the config file)",
		Example: `  capctl config repositories
  capctl config repositories -o yaml --config ./clusterctl.yaml`,
		Args: cobra.NoArgs,
		RunE: leafRun(o, o.complete, runF, runConfigRepositories),
	}
	addFormatFlag(cmd, &o.Output, "")
	return cmd
}

// complete has nothing to add: the one flag is the output format.
func (o *ConfigRepositoriesOptions) complete([]string) error { return nil }

// runConfigRepositories lists the registry of the config file.
func runConfigRepositories(ctx context.Context, o *ConfigRepositoriesOptions) error {
	cfg, err := o.Config(ctx)
	if err != nil {
		return err
	}
	reg, err := repository.NewRegistry(cfg)
	if err != nil {
		return err
	}
	return repository.RenderRepositories(o.IO.Out, o.Output, reg.List())
}
