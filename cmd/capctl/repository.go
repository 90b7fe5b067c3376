package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/mirror"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

func newCmdRepository(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "repository",
		Short:   "Work with provider repositories (mirror them for air-gapped sites, clean the download cache)",
		Long: `Work with provider repositories: mirror them into a local repository for air-gapped sites,
and clean the cache of downloaded files, ` + cacheLocation() + `.`,
	}
	cmd.AddCommand(newCmdRepositoryMirror(f, nil), newRepositoryCacheCmd(f))
	return cmd
}

// MirrorOptions is `capctl repository mirror` parsed from its flags and arguments.
type MirrorOptions struct {
	deps
	To          string
	Providers   []MirrorRef
	CertManager bool
	Pre         bool
	Offline     bool
	Layout      string
	Images      bool
	Output      output.Format
}

// MirrorRef is one provider to mirror (or whose cache to clean), named by its label.
type MirrorRef = provider.LabelReference

// defaultMirror is what `capctl init` installs on a first run.
var defaultMirror = []string{"cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm"}

const mirrorLong = `Copy provider versions into a local repository in clusterctl's layout,
{DIR}/{provider-label}/{version}/{file}: components, metadata.yaml and, for infrastructure
providers, cluster templates and cluster classes, plus cert-manager's manifests.

Providers are named by their label (cluster-api, bootstrap-kubeadm, control-plane-kubeadm,
infrastructure-docker, ipam-in-cluster, ...) with an optional version (default: latest). Without
providers, the ones 'capctl init' installs by default are mirrored. The command prints a
clusterctl.yaml fragment (providers: and cert-manager:) that points at the mirror.

With --to oci://HOST[:PORT]/PROJECT each provider version is published to an OCI registry as one
artifact at HOST/PROJECT/manifests/{type}-{name}:{version} (core-cluster-api,
bootstrap-kubeadm, infrastructure-docker, cert-manager), with the provider named in its
annotations; the fragment then names oci:// URLs. --layout archive (the default) puts every file in
one tar+gzip layer; --layout operator one layer per file named by its title, as the Cluster API
Operator reads it. Running it again pushes nothing when the registry holds the same artifacts; a
version tag that names other content is never moved. Credentials come from Docker's credential
store (docker login); --images also copies every image the providers and cert-manager run to
HOST/PROJECT/NAME:TAG (keeping digests, every platform) and prints the images: override that makes
them pulled from there. TLS is verified (OCI_CA_FILE adds a CA); plain HTTP only for registries
listed in OCI_PLAIN_HTTP_REGISTRIES, and never with credentials.`

// newCmdRepositoryMirror builds `capctl repository mirror`; runF, when set, replaces running it.
func newCmdRepositoryMirror(f *factory, runF func(*MirrorOptions) error) *cobra.Command {
	o := &MirrorOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "mirror --to DIR [PROVIDER-LABEL[:VERSION]...]",
		Short: "Copy provider versions into a local repository (clusterctl's layout) for air-gapped use",
		Long:  mirrorLong,
		Example: `  capctl repository mirror --to /srv/capi-mirror infrastructure-docker:v1.14.0 cluster-api:v1.14.0
  capctl repository mirror --to ./mirror >> ~/.config/cluster-api/clusterctl.yaml
  capctl repository mirror --to oci://registry.example.com/capi infrastructure-docker cluster-api`,
		RunE: leafRun(o, o.complete, runF, runMirror),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.To, "to", "", "Folder of the local repository to write (created if missing), or oci://HOST[:PORT]/PROJECT to publish to an OCI registry")
	fl.BoolVar(&o.Images, "images", false, "With an oci:// target: also copy every image the mirrored providers and cert-manager run to it, and print the images: override")
	fl.StringVar(&o.Layout, "layout", "", "With an oci:// target: archive (one tar+gzip layer, the default) or operator (one layer per file)")
	_ = cmd.MarkFlagRequired("to")
	fl.BoolVar(&o.CertManager, "cert-manager", true, "Also mirror cert-manager (the configured cert-manager.url and version)")
	fl.BoolVar(&o.Pre, "pre", false, "Let 'latest' pick pre-releases")
	fl.BoolVar(&o.Offline, "offline", false, "Use only local repositories, the overrides folder and the cache (no network)")
	addFormatFlag(cmd, &o.Output, "text prints a clusterctl.yaml fragment with comments; json and yaml the full result")
	return cmd
}

// complete checks --to and parses the provider labels (default: what a first init installs).
func (o *MirrorOptions) complete(args []string) error {
	if len(args) == 0 {
		args = defaultMirror
	}
	o.Providers = nil
	for _, a := range args {
		ref, err := provider.ParseLabelReference(a, true)
		if err != nil {
			return usageError{err}
		}
		o.Providers = append(o.Providers, ref)
	}
	if err := o.request().Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

func (o *MirrorOptions) request() mirror.Request {
	return mirror.Request{To: o.To, Providers: o.Providers, CertManager: o.CertManager, Pre: o.Pre, Layout: o.Layout, Images: o.Images}
}

// runMirror makes the one mirror.Run call and prints the config fragment (or the result).
func runMirror(ctx context.Context, o *MirrorOptions) error {
	progress := output.NewProgress(o.IO)
	e := env.Env{Config: o.Config, Log: o.Logger(), Progress: func(s string) { progress.Step("%s", s) },
		Repository: func(ctx context.Context) (*repository.Client, error) { return o.Repository(ctx, o.Offline) }}
	res, err := mirror.Run(ctx, e, o.request())
	if err != nil {
		return err
	}
	return res.Render(o.IO.Out, o.Output)
}
