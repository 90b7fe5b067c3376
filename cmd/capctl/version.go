package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/version"
)

func init() { registerCommand(newVersionCmd) }

func newVersionCmd(f *factory) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "version",
		Short:   "Print capctl version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			out := f.IO.Out
			switch output {
			case "":
				fmt.Fprintf(out, "capctl version: %#v\n", info)
			case "short":
				fmt.Fprintln(out, info.GitVersion)
			case "json", "yaml":
				return writeStructured(out, output, map[string]version.Info{"capctl": info})
			default:
				return usageErrorf("invalid output format %q: use one of short, yaml, json (or none)", output)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: one of short, yaml, json")
	return cmd
}
