package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/version"
)

// VersionOptions is `capctl version` parsed from its flags.
type VersionOptions struct {
	deps
	Output output.Format
	// Info is what is printed: this binary's build (tests give their own).
	Info version.Info
}

// newCmdVersion builds `capctl version`; runF, when set, replaces running it (tests).
func newCmdVersion(f *factory, runF func(*VersionOptions) error) *cobra.Command {
	o := &VersionOptions{deps: f.deps()}
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "version",
		Short:   "Print capctl version",
		Args:    cobra.NoArgs,
		RunE:    leafRun(o, o.complete, runF, runVersion),
	}
	addFormatFlag(cmd, &o.Output, "short prints the version alone", output.Short)
	return cmd
}

// complete reads this binary's build information.
func (o *VersionOptions) complete([]string) error {
	o.Info = version.Get()
	return nil
}

// runVersion prints the build information as clusterctl's version command does.
func runVersion(_ context.Context, o *VersionOptions) error {
	return o.Info.Render(o.IO.Out, o.Output)
}
