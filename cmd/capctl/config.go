package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/repository"
)

func init() { registerCommand(newCmdConfig) }

func newCmdConfig(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "config",
		Short:   "Display provider configuration",
	}
	cmd.AddCommand(newCmdConfigRepositories(f, nil))
	return cmd
}

// repositoryRow is one provider in `config repositories -o yaml|json`, with clusterctl's keys.
type repositoryRow struct {
	Name         string `json:"Name"`
	ProviderType string `json:"ProviderType"`
	URL          string `json:"URL"`
	File         string `json:"File"`
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
	var rows []repositoryRow
	for _, p := range reg.List() {
		rows = append(rows, repositoryRow{Name: p.Name, ProviderType: string(p.Type), URL: p.RepositoryURL(), File: p.ComponentsFile()})
	}
	return output.Render(o.IO.Out, o.Output, rows, func(w io.Writer) error {
		t := output.NewTable(w, "NAME", "TYPE", "URL", "FILE")
		for _, r := range rows {
			t.Row(r.Name, r.ProviderType, r.URL, r.File)
		}
		return t.Flush()
	})
}
