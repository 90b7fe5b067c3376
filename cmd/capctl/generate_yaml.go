package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/templates"
)

// generateYAMLOptions are the flags of `generate yaml`.
type generateYAMLOptions struct {
	deps

	Request templates.YAMLRequest
	Output  output.Format
	WriteTo string
}

// newCmdGenerateYAML builds `generate yaml`; runF replaces the run (tests capture the options).
func newCmdGenerateYAML(f *factory, runF func(*generateYAMLOptions) error) *cobra.Command {
	o := &generateYAMLOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "yaml",
		Short: "Process any YAML with the variable engine and print the objects",
		Long: `Process a YAML file with clusterctl's variable engine and print the resulting objects.

Variables are taken from --set, then --values, then the environment, then the config file.`,
		Example: `  cat template.yaml | capctl generate yaml --set CLUSTER_NAME=c1 > c1.yaml
  capctl generate yaml --from https://example.org/template.yaml --list-variables`,
		Args: cobra.NoArgs,
		RunE: leafRun(o, o.complete, runF, runGenerateYAML),
	}
	cmd.Flags().StringVar(&o.Request.From, "from", "-", "The YAML: a file, an http(s) URL, a GitHub file URL (…/blob/REF/PATH) or - for stdin")
	cmd.Flags().BoolVar(&o.Request.ListVariables, "list-variables", false, "List the variables the YAML uses instead of processing it")
	addObjectsFormatFlag(cmd, &o.Output)
	cmd.Flags().StringVar(&o.WriteTo, "write-to", "", "Write the YAML to this file (mode 0600) instead of stdout")
	addValuesFlags(cmd, &o.Request.Values)
	cmd.MarkFlagsMutuallyExclusive("list-variables", "write-to") // the listing goes to stdout
	return cmd
}

// complete has nothing to add: the flags are the request, which pkg/templates checks as it reads.
func (o *generateYAMLOptions) complete([]string) error { return nil }

// runGenerateYAML makes the one templates.GenerateYAML call and prints the objects or the
// variables; an input error is a usage error.
func runGenerateYAML(ctx context.Context, o *generateYAMLOptions) error {
	return asUsageError(generateYAML(ctx, o))
}

func generateYAML(ctx context.Context, o *generateYAMLOptions) error {
	r := o.Request
	r.Stdin = o.IO.In
	res, err := templates.GenerateYAML(ctx, env.Env{Config: o.Config, Log: o.Logger()}, r)
	if err != nil {
		return err
	}
	if !r.ListVariables {
		return output.WriteObjects(o.IO.Out, o.IO.ErrOut, res.Objects, o.Output, o.WriteTo)
	}
	return res.RenderVariableNames(o.IO.Out, o.Output)
}

// addValuesFlags adds --set and --values, shared by `generate cluster` and `generate yaml`.
func addValuesFlags(cmd *cobra.Command, v *templates.Values) {
	cmd.Flags().StringArrayVar(&v.Set, "set", nil, "Set a variable, NAME=VALUE (repeatable); wins over --values, the environment and the config file")
	cmd.Flags().StringVar(&v.File, "values", "", "YAML file with a map of variables (NAME: value); wins over the environment and the config file")
}

// asUsageError shows the usage with a pkg/templates input error (a bad flag or argument).
func asUsageError(err error) error {
	var ie *templates.InputError
	if errors.As(err, &ie) {
		return usageError{err}
	}
	return err
}

// addObjectsFormatFlag is -o of the commands that print objects: text (the default) and yaml
// print the YAML documents, json one v1 List.
func addObjectsFormatFlag(cmd *cobra.Command, p *output.Format) {
	addFormatFlag(cmd, p, "text and yaml print the YAML documents, json a v1 List; with --list-* json and yaml print the list as data")
}
