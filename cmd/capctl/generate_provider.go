package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

func init() { registerGenerateSubcommand(newGenerateProviderCmd) }

type generateProviderOptions struct {
	byType          map[provider.Type]*string
	targetNamespace string
	describe        bool
	raw             bool
	writeTo         string
	pre             bool
	offline         bool

	t   provider.Type
	ref provider.Reference
}

func newGenerateProviderCmd(f *factory) *cobra.Command {
	o := &generateProviderOptions{byType: map[provider.Type]*string{}}
	cmd := &cobra.Command{
		Use:   "provider (--core|--bootstrap|--control-plane|--infrastructure|--ipam|--runtime-extension|--addon) NAME[:VERSION]",
		Short: "Print a provider's processed components (what init would install)",
		Long: `Print a provider's components YAML after clusterctl's processing: variables substituted,
image overrides applied, objects moved into the target namespace and labelled, sorted for install.

With --describe, print the provider, version, contract, target namespace, the variables the
components use (with their defaults) and the images instead. With --raw, variables are left as
they are (the namespace, labels and image overrides still apply).`,
		Example: `  capctl generate provider --infrastructure docker:v1.14.0
  capctl generate provider --core cluster-api --describe
  capctl generate provider --bootstrap kubeadm:v1.14.0 --target-namespace capi-kubeadm --write-to bootstrap.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd, f)
		},
	}
	fl := cmd.Flags()
	for _, t := range provider.Types {
		o.byType[t] = new(string)
		name := strings.TrimPrefix(t.Flag(), "--")
		short := map[provider.Type]string{provider.BootstrapProviderType: "b", provider.ControlPlaneProviderType: "c", provider.InfrastructureProviderType: "i"}[t]
		fl.StringVarP(o.byType[t], name, short, "", fmt.Sprintf("%s to generate, as NAME[:VERSION] (default version: latest)", t))
	}
	fl.StringVarP(&o.targetNamespace, "target-namespace", "n", "", "Namespace to put the provider in (default: the one in its components)")
	fl.BoolVar(&o.describe, "describe", false, "Describe the provider (version, contract, variables, images) instead of printing its components")
	fl.BoolVar(&o.raw, "raw", false, "Leave variables unsubstituted")
	fl.StringVar(&o.writeTo, "write-to", "", "Write the YAML to this file (mode 0600) instead of stdout")
	fl.BoolVar(&o.pre, "pre", false, "Let 'latest' pick pre-releases")
	fl.BoolVar(&o.offline, "offline", false, "Use only local repositories, the overrides folder and the cache (no network)")
	return cmd
}

func (o *generateProviderOptions) validate() error {
	var set []provider.Type
	for _, t := range provider.Types {
		if *o.byType[t] != "" {
			set = append(set, t)
		}
	}
	var flags []string
	for _, t := range provider.Types {
		flags = append(flags, t.Flag())
	}
	switch len(set) {
	case 0:
		return usageErrorf("one of %s is required", strings.Join(flags, ", "))
	case 1:
	default:
		return usageErrorf("only one of %s may be set", strings.Join(flags, ", "))
	}
	o.t = set[0]
	ref, err := provider.ParseReference(*o.byType[o.t], false)
	if err != nil {
		return usageErrorf("%s: %v", o.t.Flag(), err)
	}
	o.ref = ref
	if o.targetNamespace != "" {
		if errs := validation.IsDNS1123Label(o.targetNamespace); len(errs) > 0 {
			return usageErrorf("--target-namespace %q: %s", o.targetNamespace, strings.Join(errs, "; "))
		}
	}
	return nil
}

func (o *generateProviderOptions) run(cmd *cobra.Command, f *factory) error {
	ctx := cmd.Context()
	c, err := f.repositoryClient(ctx, o.offline)
	if err != nil {
		return err
	}
	p, err := c.Provider(o.ref.Name, o.t)
	if err != nil {
		return err
	}
	comp, err := c.Components(ctx, p, repository.ComponentsOptions{
		Version:         o.ref.Version,
		Pre:             o.pre,
		TargetNamespace: o.targetNamespace,
		SkipVariables:   o.raw || o.describe,
	})
	if err != nil {
		return err
	}
	if o.describe {
		describeComponents(f.IO.Out, comp)
		return nil
	}
	var buf bytes.Buffer
	for i, obj := range comp.Objects {
		b, err := yaml.Marshal(obj.Object)
		if err != nil {
			return fmt.Errorf("rendering %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	if o.writeTo != "" {
		// Substituted values may hold credentials (e.g. *_B64ENCODED_CREDENTIALS).
		if err := output.WritePrivateFile(o.writeTo, buf.Bytes()); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "Wrote %d objects of %s %s to %s\n", len(comp.Objects), p.ManifestLabel(), comp.Version, o.writeTo)
		return nil
	}
	_, err = f.IO.Out.Write(buf.Bytes())
	return err
}

func describeComponents(w io.Writer, c *repository.Components) {
	fmt.Fprintf(w, "Name:               %s\n", c.Provider.Name)
	fmt.Fprintf(w, "Type:               %s\n", c.Provider.Type)
	fmt.Fprintf(w, "URL:                %s\n", c.Provider.RepositoryURL())
	fmt.Fprintf(w, "Version:            %s\n", c.Version)
	fmt.Fprintf(w, "Contract:           %s\n", c.Contract)
	fmt.Fprintf(w, "File:               %s\n", c.File)
	fmt.Fprintf(w, "TargetNamespace:    %s\n", c.TargetNamespace)
	if len(c.Variables) > 0 {
		fmt.Fprintln(w, "Variables:")
		for _, v := range c.Variables {
			note := ""
			if v.Nested {
				note = ", only inside another variable's default"
			}
			switch {
			case v.Required:
				fmt.Fprintf(w, "  - %s (required%s)\n", v.Name, note)
			default:
				fmt.Fprintf(w, "  - %s (default: %s%s)\n", v.Name, v.Default, note)
			}
		}
	}
	if len(c.Images) > 0 {
		fmt.Fprintln(w, "Images:")
		for _, i := range c.Images {
			fmt.Fprintf(w, "  - %s\n", i)
		}
	}
}
