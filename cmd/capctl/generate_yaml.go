package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/pkg/templates"
	"github.com/capctl/capctl/pkg/variables"
)

func init() { registerGenerateSubcommand(newGenerateYAMLCmd) }

type generateYAMLOptions struct {
	from          string
	listVariables bool
	output        string
	writeTo       string
	vars          variableFlags
}

func newGenerateYAMLCmd(f *factory) *cobra.Command {
	o := &generateYAMLOptions{}
	cmd := &cobra.Command{
		Use:   "yaml",
		Short: "Process any YAML with the variable engine and print the objects",
		Long: `Process a YAML file with clusterctl's variable engine and print the resulting objects.

Variables are taken from --set, then --values, then the environment, then the config file.`,
		Example: `  cat template.yaml | capctl generate yaml --set CLUSTER_NAME=c1 > c1.yaml
  capctl generate yaml --from https://example.org/template.yaml --list-variables`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.output != "yaml" && o.output != "json" {
				return usageErrorf("invalid output format %q: use yaml or json", o.output)
			}
			if o.listVariables && o.writeTo != "" {
				return usageErrorf("--list-variables prints to stdout; it cannot be combined with --write-to")
			}
			if err := o.vars.parse(nil); err != nil {
				return err
			}
			return o.run(cmd.Context(), f)
		},
	}
	cmd.Flags().StringVar(&o.from, "from", "-", "The YAML: a file, an http(s) URL, a GitHub file URL (…/blob/REF/PATH) or - for stdin")
	cmd.Flags().BoolVar(&o.listVariables, "list-variables", false, "List the variables the YAML uses instead of processing it")
	cmd.Flags().StringVarP(&o.output, "output", "o", "yaml", "Output format: yaml or json (a v1 List)")
	cmd.Flags().StringVar(&o.writeTo, "write-to", "", "Write the YAML to this file (mode 0600) instead of stdout")
	o.vars.add(cmd)
	return cmd
}

func (o *generateYAMLOptions) run(ctx context.Context, f *factory) error {
	cfg, err := f.Config(ctx)
	if err != nil {
		return err
	}
	b, name, err := templates.Fetch(ctx, o.from, templates.FetchOptions{
		Stdin: f.IO.In, GitHubToken: cfg.GitHubToken(), RawGitHubURL: os.Getenv(envGitHubRawURL), Log: f.Logger(),
	})
	if err != nil {
		return err
	}
	res, err := templates.Render(ctx, templates.Input{
		Name: name, Template: b, Lookup: o.vars.lookup(nil, cfg), ListOnly: o.listVariables,
	})
	if err != nil {
		var me *variables.MissingError
		if errors.As(err, &me) {
			return fmt.Errorf("value for variables [%s] is not set: set them with --set NAME=VALUE, a --values file, environment variables or the config file", strings.Join(me.Names, ", "))
		}
		return err
	}
	if o.listVariables {
		// clusterctl's layout: every variable, required or not, sorted.
		names := make([]string, 0, len(res.Variables))
		for _, v := range res.Variables {
			names = append(names, v.Name)
		}
		sort.Strings(names)
		if len(names) == 0 {
			fmt.Fprintln(f.IO.Out)
			return nil
		}
		fmt.Fprintln(f.IO.Out, "Variables:")
		for _, n := range names {
			fmt.Fprintf(f.IO.Out, "  - %s\n", n)
		}
		return nil
	}
	return writeObjects(f, res.Objects, o.output, o.writeTo)
}
