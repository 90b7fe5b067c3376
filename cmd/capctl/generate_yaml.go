package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/pkg/templates"
)

func init() {
	registerGenerateSubcommand(func(f *factory) *cobra.Command { return newCmdGenerateYAML(f, nil) })
}

// generateYAMLOptions are the flags of `generate yaml`.
type generateYAMLOptions struct {
	f *factory

	Request templates.YAMLRequest
	Output  string
	WriteTo string
}

// newCmdGenerateYAML builds `generate yaml`; runF replaces the run (tests capture the options).
func newCmdGenerateYAML(f *factory, runF func(*generateYAMLOptions) error) *cobra.Command {
	o := &generateYAMLOptions{f: f}
	cmd := &cobra.Command{
		Use:   "yaml",
		Short: "Process any YAML with the variable engine and print the objects",
		Long: `Process a YAML file with clusterctl's variable engine and print the resulting objects.

Variables are taken from --set, then --values, then the environment, then the config file.`,
		Example: `  cat template.yaml | capctl generate yaml --set CLUSTER_NAME=c1 > c1.yaml
  capctl generate yaml --from https://example.org/template.yaml --list-variables`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateObjectsOutput(o.Output); err != nil {
				return err
			}
			if o.Request.ListVariables && o.WriteTo != "" {
				return usageErrorf("--list-variables prints to stdout; it cannot be combined with --write-to")
			}
			if runF != nil {
				return runF(o)
			}
			return asUsageError(o.run(cmd.Context()))
		},
	}
	cmd.Flags().StringVar(&o.Request.From, "from", "-", "The YAML: a file, an http(s) URL, a GitHub file URL (…/blob/REF/PATH) or - for stdin")
	cmd.Flags().BoolVar(&o.Request.ListVariables, "list-variables", false, "List the variables the YAML uses instead of processing it")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "yaml", "Output format: yaml or json (a v1 List)")
	cmd.Flags().StringVar(&o.WriteTo, "write-to", "", "Write the YAML to this file (mode 0600) instead of stdout")
	addValuesFlags(cmd, &o.Request.Values)
	return cmd
}

func (o *generateYAMLOptions) run(ctx context.Context) error {
	cfg, err := o.f.Config(ctx)
	if err != nil {
		return err
	}
	r := o.Request
	r.Config, r.Stdin, r.Log = cfg, o.f.IO.In, o.f.Logger()
	res, err := templates.GenerateYAML(ctx, r)
	if err != nil {
		return err
	}
	if !r.ListVariables {
		return writeObjects(o.f, res.Objects, o.Output, o.WriteTo)
	}
	// clusterctl's layout: every variable, required or not, sorted.
	names := make([]string, 0, len(res.Variables))
	for _, v := range res.Variables {
		names = append(names, v.Name)
	}
	sort.Strings(names)
	out := o.f.IO.Out
	if len(names) == 0 {
		fmt.Fprintln(out)
		return nil
	}
	fmt.Fprintln(out, "Variables:")
	for _, n := range names {
		fmt.Fprintf(out, "  - %s\n", n)
	}
	return nil
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

func validateObjectsOutput(output string) error {
	if output != "yaml" && output != "json" {
		return usageErrorf("invalid output format %q: use yaml or json", output)
	}
	return nil
}

// writeObjects prints objects as YAML or JSON to stdout or into a 0600 file.
func writeObjects(f *factory, objs []unstructured.Unstructured, output, writeTo string) error {
	var b []byte
	var err error
	if output == "json" {
		b, err = templates.JSON(objs)
	} else {
		b, err = templates.YAML(objs)
	}
	if err != nil {
		return err
	}
	if writeTo == "" || writeTo == "-" {
		_, err = f.IO.Out.Write(b)
		return err
	}
	p := filepath.Clean(writeTo)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	// WriteFile keeps the mode of an existing file; templates may hold secrets.
	if err := os.Chmod(p, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	fmt.Fprintf(f.IO.ErrOut, "Wrote %d objects to %s\n", len(objs), p)
	return nil
}
