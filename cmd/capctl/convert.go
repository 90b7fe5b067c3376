package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/pkg/conversion"
	"github.com/capctl/capctl/pkg/convert"
	"github.com/capctl/capctl/pkg/env"
)

// ConvertOptions are the flags and arguments of `capctl convert`: Request is the one
// conversion request.
type ConvertOptions struct {
	deps
	convert.Request
}

func newCmdConvert(f *factory, runF func(*ConvertOptions) error) *cobra.Command {
	o := &ConvertOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "convert [FILE|DIR|-]...",
		Short: "Convert Cluster API objects in YAML files from v1beta1 to v1beta2",
		Long: strings.TrimSpace(`
Convert Cluster API objects written at v1beta1 (and the v1alpha1 IPAM and runtime kinds) to
v1beta2, the API of Cluster API v1.14, with the upstream API types' conversion functions.

Every kind of sigs.k8s.io/cluster-api/api is converted: Cluster, ClusterClass, Machine*,
MachineHealthCheck, MachineDrainRule, KubeadmConfig(Template), KubeadmControlPlane(Template),
ClusterResourceSet(Binding), IPAddress(Claim), ExtensionConfig, and the Docker provider's
Docker*/Dev* kinds. References become v1beta2's apiGroup/kind/name form. A field that has no
place in v1beta2 is reported by object and path, never dropped silently. Other providers' kinds
are kept as they are, with a warning; documents that are not Cluster API objects are copied byte
for byte. Key order and comments are kept where a field keeps its path.

A single FILE (or standard input, "-" or no argument) is printed converted (or written to -o FILE);
a v1 List (kubectl get -o yaml) has its items converted.
A directory is converted with --in-place (every *.yaml and *.yml below it, hidden folders skipped)
or shown with --dry-run: a table of file, object, from → to and warnings. An object that cannot
be converted (not valid for its version, unrendered ${VARIABLES}) fails the run and nothing is
written.`),
		Example: strings.TrimSpace(`
  # Print a file converted to v1beta2
  capctl convert cluster.yaml

  # Convert a fleet repository in place, after looking at what would change
  capctl convert ./clusters --dry-run
  capctl convert ./clusters --in-place

  # From standard input to a file
  kubectl get cluster,kcp,md -n team-a -o yaml | capctl convert - -o team-a-v1beta2.yaml`),
		Args: cobra.ArbitraryArgs,
		RunE: leafRun(o, o.complete, runF, runConvert),
	}
	cmd.Flags().StringVar(&o.ToVersion, "to-version", conversion.TargetVersion, "The API version to convert to (only v1beta2)")
	cmd.Flags().StringVarP(&o.OutputFile, "output", "o", "", "Write the converted YAML to this file (mode 0600) instead of standard output")
	cmd.Flags().BoolVar(&o.InPlace, "in-place", false, "Rewrite each converted file in place (files and directories)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Convert without writing anything and print what would change, file by file")
	// -o writes one converted file: neither a rewrite in place nor a dry run writes one.
	cmd.MarkFlagsMutuallyExclusive("output", "in-place")
	cmd.MarkFlagsMutuallyExclusive("output", "dry-run")
	return cmd
}

// complete takes the paths from the arguments and checks the request, before anything is read.
func (o *ConvertOptions) complete(args []string) error {
	o.Paths, o.Stdin = args, o.IO.In
	if err := o.Request.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// runConvert makes the one convert.Run call and renders: the YAML for one input, a summary table
// for directories and dry runs.
func runConvert(ctx context.Context, o *ConvertOptions) error {
	rep, err := convert.Run(ctx, env.Env{}, o.Request)
	if rep == nil {
		return err
	}
	table := o.DryRun || o.InPlace
	if table {
		if terr := rep.WriteTable(o.IO.Out); terr != nil && err == nil {
			err = terr
		}
	} else {
		_ = rep.WriteWarnings(o.IO.ErrOut)
	}
	if err != nil {
		return err
	}
	if !table && o.OutputFile == "" {
		if _, werr := o.IO.Out.Write(rep.Files[0].Output); werr != nil {
			return werr
		}
	}
	return rep.WriteSummary(o.IO.ErrOut, o.DryRun, o.InPlace)
}
