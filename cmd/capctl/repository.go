package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

func init() { registerCommand(newRepositoryCmd) }

func newRepositoryCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "repository",
		Short:   "Work with provider repositories (mirror them for air-gapped sites, clean the download cache)",
		Long: `Work with provider repositories: mirror them into a local repository for air-gapped sites,
and clean the cache of downloaded files, ` + cacheLocation() + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRepositoryMirrorCmd(f), newRepositoryCacheCmd(f))
	return cmd
}

type mirrorOptions struct {
	to          string
	certManager bool
	pre         bool
	offline     bool
	output      output.Format

	requests []mirrorRef
}

type mirrorRef struct {
	label, name, version string
	t                    provider.Type
}

// defaultMirror is what `capctl init` installs on a first run.
var defaultMirror = []string{"cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm"}

func newRepositoryMirrorCmd(f *factory) *cobra.Command {
	o := &mirrorOptions{}
	cmd := &cobra.Command{
		Use:   "mirror --to DIR [PROVIDER-LABEL[:VERSION]...]",
		Short: "Copy provider versions into a local repository (clusterctl's layout) for air-gapped use",
		Long: `Copy provider versions into a local repository in clusterctl's layout,
{DIR}/{provider-label}/{version}/{file}: components, metadata.yaml and, for infrastructure
providers, cluster templates and cluster classes, plus cert-manager's manifests.

Providers are named by their label (cluster-api, bootstrap-kubeadm, control-plane-kubeadm,
infrastructure-docker, ipam-in-cluster, ...) with an optional version (default: latest). Without
providers, the ones 'capctl init' installs by default are mirrored. The command prints a
clusterctl.yaml fragment (providers: and cert-manager:) that points at the mirror.`,
		Example: `  capctl repository mirror --to /srv/capi-mirror infrastructure-docker:v1.14.0 cluster-api:v1.14.0
  capctl repository mirror --to ./mirror >> ~/.config/cluster-api/clusterctl.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args); err != nil {
				return err
			}
			return o.run(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.to, "to", "", "Folder of the local repository to write (created if missing)")
	fl.BoolVar(&o.certManager, "cert-manager", true, "Also mirror cert-manager (the configured cert-manager.url and version)")
	fl.BoolVar(&o.pre, "pre", false, "Let 'latest' pick pre-releases")
	fl.BoolVar(&o.offline, "offline", false, "Use only local repositories, the overrides folder and the cache (no network)")
	output.AddFormatFlag(cmd, &o.output, "text prints a clusterctl.yaml fragment with comments; json and yaml the full result")
	return cmd
}

func (o *mirrorOptions) validate(args []string) error {
	if o.to == "" {
		return usageErrorf("--to DIR is required")
	}
	if st, err := os.Stat(o.to); err == nil && !st.IsDir() {
		return usageErrorf("--to %s is a file, not a folder", o.to)
	}
	if len(args) == 0 {
		args = defaultMirror
	}
	for _, a := range args {
		label, version, _ := strings.Cut(a, ":")
		t, name, ok := provider.ParseManifestLabel(label)
		if !ok {
			return usageErrorf("%q is not a provider label: use TYPE-NAME[:VERSION] such as cluster-api, bootstrap-kubeadm, infrastructure-aws:v2.8.1", a)
		}
		if strings.Contains(a, ":") {
			if err := provider.ValidateVersion(version); err != nil || version == "" {
				return usageErrorf("invalid provider %q: the version after ':' must look like v1.2.3", a)
			}
		}
		o.requests = append(o.requests, mirrorRef{label: label, name: name, version: version, t: t})
	}
	return nil
}

func (o *mirrorOptions) run(cmd *cobra.Command, f *factory) error {
	ctx := cmd.Context()
	c, err := f.repositoryClient(ctx, o.offline)
	if err != nil {
		return err
	}
	var reqs []repository.MirrorRequest
	for _, r := range o.requests {
		p, err := c.Provider(r.name, r.t)
		if err != nil {
			return err
		}
		reqs = append(reqs, repository.MirrorRequest{Provider: p, Version: r.version})
	}
	res, err := c.Mirror(ctx, o.to, reqs, repository.MirrorOptions{
		CertManager: o.certManager,
		Pre:         o.pre,
		Progress:    func(what string) { fmt.Fprintf(f.IO.ErrOut, "Mirroring %s\n", what) },
	})
	if err != nil {
		return err
	}
	out := f.IO.Out
	if o.output.Structured() {
		return output.WriteStructured(out, o.output, res)
	}
	fmt.Fprintf(out, "# Local repository written by capctl repository mirror: %s\n", res.Dir)
	for _, m := range res.Providers {
		fmt.Fprintf(out, "#   %s %s %s: %s\n", m.Type, m.Name, m.Version, strings.Join(m.Files, ", "))
	}
	if m := res.CertManager; m != nil {
		fmt.Fprintf(out, "#   cert-manager %s: %s\n", m.Version, strings.Join(m.Files, ", "))
	}
	fmt.Fprintln(out, "# Add the following to clusterctl.yaml to use it:")
	fmt.Fprint(out, res.Config)
	return nil
}
