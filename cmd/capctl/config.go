package main

import (
	"github.com/spf13/cobra"

	"github.com/capctl/capctl/pkg/repository"
)

func init() { registerCommand(newConfigCmd) }

func newConfigCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "config",
		Short:   "Display provider configuration",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newConfigRepositoriesCmd(f))
	return cmd
}

// repositoryRow is one provider in `config repositories -o yaml|json`, with clusterctl's keys.
type repositoryRow struct {
	Name         string `json:"Name"`
	ProviderType string `json:"ProviderType"`
	URL          string `json:"URL"`
	File         string `json:"File"`
}

func newConfigRepositoriesCmd(f *factory) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "repositories",
		Short: "List the provider repositories capctl knows (built-in and from the config file)",
		Example: `  capctl config repositories
  capctl config repositories -o yaml --config ./clusterctl.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "text", "yaml", "json":
			default:
				return usageErrorf("invalid output format %q: use one of text, yaml, json", output)
			}
			cfg, err := f.Config(cmd.Context())
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
			out := f.IO.Out
			if output == "json" || output == "yaml" {
				return writeStructured(out, output, rows)
			}
			table := make([][]string, 0, len(rows))
			for _, r := range rows {
				table = append(table, []string{r.Name, r.ProviderType, r.URL, r.File})
			}
			writePlainTable(out, []string{"NAME", "TYPE", "URL", "FILE"}, table)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "Output format: one of text, yaml, json")
	return cmd
}
