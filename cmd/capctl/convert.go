package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/convert"
)

func init() { registerCommand(func(f *factory) *cobra.Command { return newCmdConvert(f, nil) }) }

// ConvertOptions are the flags and arguments of `capctl convert`.
type ConvertOptions struct {
	IO *iostreams.IOStreams

	Paths     []string
	ToVersion string
	Output    string
	InPlace   bool
	DryRun    bool
}

func newCmdConvert(f *factory, runF func(*ConvertOptions) error) *cobra.Command {
	o := &ConvertOptions{IO: f.IO}
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
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return o.Run(cmd)
		},
	}
	cmd.Flags().StringVar(&o.ToVersion, "to-version", convert.TargetVersion, "The API version to convert to (only v1beta2)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Write the converted YAML to this file (mode 0600) instead of standard output")
	cmd.Flags().BoolVar(&o.InPlace, "in-place", false, "Rewrite each converted file in place (files and directories)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Convert without writing anything and print what would change, file by file")
	return cmd
}

func (o *ConvertOptions) request() convert.Request {
	return convert.Request{Paths: o.Paths, Stdin: o.IO.In, ToVersion: o.ToVersion, InPlace: o.InPlace, DryRun: o.DryRun}
}

// Validate checks the flags against each other and the paths, before anything is read.
func (o *ConvertOptions) Validate() error {
	if o.Output != "" && (o.InPlace || o.DryRun) {
		return usageErrorf("-o/--output writes one converted file: it cannot be combined with --in-place or --dry-run")
	}
	if o.Output != "" && len(o.Paths) > 1 {
		return usageErrorf("-o/--output takes the conversion of one input; for several files or a directory use --in-place")
	}
	req := o.request()
	if err := req.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// Run converts and renders: the YAML for one input, a summary table for directories and dry runs.
func (o *ConvertOptions) Run(cmd *cobra.Command) error {
	rep, err := convert.Run(cmd.Context(), o.request())
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
	if !table {
		out := rep.Files[0].Output
		if o.Output != "" {
			// Converted objects may hold secrets (files in a KubeadmConfig), so 0600.
			if werr := output.WritePrivateFile(o.Output, out); werr != nil {
				return werr
			}
		} else if _, werr := o.IO.Out.Write(out); werr != nil {
			return werr
		}
	}
	return rep.WriteSummary(o.IO.ErrOut, o.DryRun, o.InPlace)
}
