package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/version"
)

func init() { registerCommand(newVersionCmd) }

func newVersionCmd(f *factory) *cobra.Command {
	var format output.Format
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "version",
		Short:   "Print capctl version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := version.Get()
			out := f.IO.Out
			switch format {
			case output.Short:
				fmt.Fprintln(out, info.GitVersion)
			case output.JSON, output.YAML:
				return output.WriteStructured(out, format, map[string]version.Info{"capctl": info})
			default:
				fmt.Fprintf(out, "capctl version: %#v\n", info)
			}
			return nil
		},
	}
	output.AddFormatFlag(cmd, &format, "short prints the version alone", output.Short)
	return cmd
}
