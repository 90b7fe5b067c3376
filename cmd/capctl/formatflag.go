package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
)

// formatValue is the pflag.Value behind -o: it validates at parse time, so a bad format is a flag
// error (printed with the usage) before any file, network or cluster is touched. It lives in cmd,
// the only package that sees flags; feature packages render through output.Format.
type formatValue struct {
	p       *output.Format
	allowed []output.Format
}

func (v *formatValue) String() string { return string(*v.p) }
func (v *formatValue) Type() string   { return "format" }

func (v *formatValue) Set(s string) error {
	f := output.Format(strings.ToLower(strings.TrimSpace(s)))
	if f == "" {
		f = output.Text
	}
	if !slices.Contains(v.allowed, f) {
		return fmt.Errorf("invalid output format %q: use one of %s", s, joinFormats(v.allowed))
	}
	*v.p = f
	return nil
}

func joinFormats(fs []output.Format) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// addFormatFlag registers -o/--output on cmd, storing into p (set to text, the default). what
// says what the structured formats print (e.g. "the plan and the result"); extra adds formats
// beyond text, json and yaml for the rare command that needs one (version's short).
func addFormatFlag(cmd *cobra.Command, p *output.Format, what string, extra ...output.Format) {
	allowed := append(slices.Clone(output.Common), extra...)
	*p = output.Text
	usage := "Output format: one of " + joinFormats(allowed)
	if what != "" {
		usage += " (" + what + ")"
	}
	cmd.Flags().VarP(&formatValue{p: p, allowed: allowed}, "output", "o", usage)
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		s := make([]string, len(allowed))
		for i, f := range allowed {
			s[i] = string(f)
		}
		return s, cobra.ShellCompDirectiveNoFileComp
	})
}
