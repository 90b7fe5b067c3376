package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

// GenerateProviderOptions is `capctl generate provider` parsed from its flags.
type GenerateProviderOptions struct {
	deps
	Type            provider.Type
	Ref             provider.Reference
	TargetNamespace string
	Describe        bool
	Raw             bool
	WriteTo         string
	Pre             bool
	Offline         bool

	byType map[provider.Type]*string
}

const generateProviderLong = `Print a provider's components YAML after clusterctl's processing: variables substituted,
image overrides applied, objects moved into the target namespace and labelled, sorted for install.

With --describe, print the provider, version, contract, target namespace, the variables the
components use (with their defaults) and the images instead. With --raw, variables are left as
they are (the namespace, labels and image overrides still apply).`

// newCmdGenerateProvider builds `capctl generate provider`; runF, when set, replaces running it.
func newCmdGenerateProvider(f *factory, runF func(*GenerateProviderOptions) error) *cobra.Command {
	o := &GenerateProviderOptions{deps: f.deps(), byType: map[provider.Type]*string{}}
	cmd := &cobra.Command{
		Use:   "provider (--core|--bootstrap|--control-plane|--infrastructure|--ipam|--runtime-extension|--addon) NAME[:VERSION]",
		Short: "Print a provider's processed components (what init would install)",
		Long:  generateProviderLong,
		Example: `  capctl generate provider --infrastructure docker:v1.14.0
  capctl generate provider --core cluster-api --describe
  capctl generate provider --bootstrap kubeadm:v1.14.0 --target-namespace capi-kubeadm --write-to bootstrap.yaml`,
		Args: cobra.NoArgs,
		RunE: leafRun(o, o.complete, runF, runGenerateProvider),
	}
	fl := cmd.Flags()
	var typeFlags []string
	for _, t := range provider.Types {
		o.byType[t] = new(string)
		name := strings.TrimPrefix(t.Flag(), "--")
		fl.StringVarP(o.byType[t], name, t.FlagShorthand(), "", fmt.Sprintf("%s to generate, as NAME[:VERSION] (default version: latest)", t))
		typeFlags = append(typeFlags, name)
	}
	// Exactly one provider flag: cobra's rules.
	cmd.MarkFlagsOneRequired(typeFlags...)
	cmd.MarkFlagsMutuallyExclusive(typeFlags...)
	fl.StringVarP(&o.TargetNamespace, "target-namespace", "n", "", "Namespace to put the provider in (default: the one in its components)")
	fl.BoolVar(&o.Describe, "describe", false, "Describe the provider (version, contract, variables, images) instead of printing its components")
	fl.BoolVar(&o.Raw, "raw", false, "Leave variables unsubstituted")
	fl.StringVar(&o.WriteTo, "write-to", "", "Write the YAML to this file (mode 0600) instead of stdout")
	fl.BoolVar(&o.Pre, "pre", false, "Let 'latest' pick pre-releases")
	fl.BoolVar(&o.Offline, "offline", false, "Use only local repositories, the overrides folder and the cache (no network)")
	return cmd
}

// complete picks the one provider flag given (cobra refuses none or several) and parses its
// reference.
func (o *GenerateProviderOptions) complete([]string) error {
	for _, t := range provider.Types {
		if *o.byType[t] != "" {
			o.Type = t
		}
	}
	if o.Type == "" { // a provider flag given as ""
		return usageErrorf("the provider flag needs NAME[:VERSION]")
	}
	ref, err := provider.ParseReference(*o.byType[o.Type], false)
	if err != nil {
		return usageErrorf("%s: %v", o.Type.Flag(), err)
	}
	o.Ref = ref
	if err := repository.CheckTargetNamespace(o.TargetNamespace); err != nil {
		return usageError{err}
	}
	return nil
}

// runGenerateProvider fetches and processes the components, then describes or prints them.
func runGenerateProvider(ctx context.Context, o *GenerateProviderOptions) error {
	c, err := o.Repository(ctx, o.Offline)
	if err != nil {
		return err
	}
	p, err := c.Provider(o.Ref.Name, o.Type)
	if err != nil {
		return err
	}
	comp, err := c.Components(ctx, p, repository.ComponentsOptions{
		Version:         o.Ref.Version,
		Pre:             o.Pre,
		TargetNamespace: o.TargetNamespace,
		SkipVariables:   o.Raw || o.Describe,
	})
	if err != nil {
		return err
	}
	if o.Describe {
		return comp.WriteSummary(o.IO.Out)
	}
	return comp.WriteObjects(o.IO.Out, o.IO.ErrOut, o.WriteTo)
}
