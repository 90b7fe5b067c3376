package main

import (
	"sort"

	"github.com/spf13/cobra"
)

func init() { registerCommand(newCmdGenerate) }

// generateSubcommands are the subcommands of `capctl generate`; each file adds its own with
// registerGenerateSubcommand in an init func, so that nobody edits a shared list.
var generateSubcommands []func(*factory) *cobra.Command

// registerGenerateSubcommand adds a `capctl generate` subcommand (cluster, yaml, provider, ...).
func registerGenerateSubcommand(b func(*factory) *cobra.Command) {
	generateSubcommands = append(generateSubcommands, b)
}

func newCmdGenerate(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "generate",
		Short:   "Generate YAML: cluster templates, provider components, any YAML with variables",
		Long: `Generate YAML using clusterctl's variable engine.

The subcommands print to stdout (or --write-to a file) what would be applied to a cluster; nothing
is applied.`,
	}
	subs := make([]*cobra.Command, 0, len(generateSubcommands))
	for _, b := range generateSubcommands {
		subs = append(subs, b(f))
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	cmd.AddCommand(subs...)
	return cmd
}
