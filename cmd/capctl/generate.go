package main

import (
	"github.com/spf13/cobra"
)

func newCmdGenerate(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "generate",
		Short:   "Generate YAML: cluster templates, provider components, any YAML with variables",
		Long: `Generate YAML using clusterctl's variable engine.

The subcommands print to stdout (or --write-to a file) what would be applied to a cluster; nothing
is applied.`,
	}
	cmd.AddCommand(newCmdGenerateCluster(f, nil), newCmdGenerateProvider(f, nil), newCmdGenerateYAML(f, nil))
	return cmd
}
