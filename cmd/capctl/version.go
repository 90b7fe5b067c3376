package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/version"
)

func init() {
	registerCommand(func(f *factory) *cobra.Command { return newCmdVersion(f, nil) })
}

// VersionOptions is `capctl version` parsed from its flags.
type VersionOptions struct {
	deps
	Output output.Format
}

// newCmdVersion builds `capctl version`; runF, when set, replaces running it (tests).
func newCmdVersion(f *factory, runF func(*VersionOptions) error) *cobra.Command {
	o := &VersionOptions{deps: f.deps()}
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "version",
		Short:   "Print capctl version",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if runF != nil {
				return runF(o)
			}
			return runVersion(o.IO.Out, o.Output, version.Get())
		},
	}
	addFormatFlag(cmd, &o.Output, "short prints the version alone", output.Short)
	return cmd
}

// runVersion prints info as clusterctl's version command does.
func runVersion(out io.Writer, format output.Format, info version.Info) error {
	switch format {
	case output.Short:
		_, err := fmt.Fprintln(out, info.GitVersion)
		return err
	case output.JSON, output.YAML:
		return output.WriteStructured(out, format, map[string]version.Info{"capctl": info})
	}
	_, err := fmt.Fprintf(out, "capctl version: %#v\n", info)
	return err
}
