package main

import (
	"context"

	"github.com/spf13/cobra"
)

// Every command that runs a feature has one shape:
//
//	newCmdX(f *factory, runF func(*XOptions) error) *cobra.Command
//	(o *XOptions) complete(args []string) error  // flags and arguments → the request; no cluster
//	runX(ctx context.Context, o *XOptions) error // the one feature call, then its renderer
//
// leafRun is the RunE that joins them: the flags' "X needs Y" rules (requireFlags), complete,
// then runF (tests capture the options there) or run. TestEveryCommandHasAFlagToRequestCase holds every command to it.
func leafRun[T any](o *T, complete func([]string) error, runF func(*T) error, run func(context.Context, *T) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := checkRequiredFlags(cmd.Flags()); err != nil {
			return err
		}
		if err := complete(args); err != nil {
			return err
		}
		if runF != nil {
			return runF(o)
		}
		return run(cmd.Context(), o)
	}
}
