package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	clusterinit "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/multicluster"
)

// providerFlags are the provider selection flags of init list-images, its request.
type providerFlags struct {
	Selection       clusterinit.Selection
	TargetNamespace string
}

func (p *providerFlags) add(cmd *cobra.Command) {
	addProviderFlags(cmd, &p.Selection, &p.TargetNamespace)
}

// request is the one request of `init list-images`.
func (p *providerFlags) request() clusterinit.ImagesRequest {
	return clusterinit.ImagesRequest{Selection: p.Selection, TargetNamespace: p.TargetNamespace}
}

// addProviderFlags adds the provider selection flags shared by init and init list-images.
func addProviderFlags(cmd *cobra.Command, sel *clusterinit.Selection, targetNamespace *string) {
	fl := cmd.Flags()
	fl.StringVar(&sel.Core, "core", "", "Core provider version (e.g. cluster-api:v1.14.0) to add to the management cluster. If unspecified on a first init, Cluster API's latest release is used")
	fl.StringSliceVarP(&sel.Bootstrap, "bootstrap", "b", nil, "Bootstrap providers and versions (e.g. kubeadm:v1.14.0) to add. If unspecified on a first init, kubeadm's latest release is used; '-' adds none")
	fl.StringSliceVarP(&sel.ControlPlane, "control-plane", "c", nil, "Control plane providers and versions (e.g. kubeadm:v1.14.0) to add. If unspecified on a first init, kubeadm's latest release is used; '-' adds none")
	fl.StringSliceVarP(&sel.Infrastructure, "infrastructure", "i", nil, "Infrastructure providers and versions (e.g. aws:v2.8.1) to add")
	fl.StringSliceVar(&sel.IPAM, "ipam", nil, "IPAM providers and versions (e.g. in-cluster:v1.0.0) to add")
	fl.StringSliceVar(&sel.RuntimeExtension, "runtime-extension", nil, "Runtime extension providers and versions to add")
	fl.StringSliceVar(&sel.Addon, "addon", nil, "Add-on providers and versions (e.g. helm:v0.3.2) to add")
	fl.StringVarP(targetNamespace, "target-namespace", "n", "", "The namespace where the providers of this run are installed. If unspecified, each provider's default namespace")
}

// InitOptions is `capctl init` parsed from its flags: Options is the one init request.
type InitOptions struct {
	deps
	clusterinit.InitRequest
	Output output.Format
}

const initLong = `
Initialize a management cluster: install cert-manager (unless a working one is there) and the
chosen Cluster API providers, and record them in the provider inventory that clusterctl reads.

On a first init (no core provider installed) cluster-api, the kubeadm bootstrap provider and the
kubeadm control plane provider are added unless named (or opted out with '-'); later inits add
only what is named. Providers already installed at the same version are skipped, so re-running an
init is safe and completes one that failed part-way. A provider installed at another version is
an error: use 'capctl upgrade'.

Everything is applied with server-side apply (field manager "capctl"); CRDs are established before
objects that need them. Unlike clusterctl, capctl waits by default until the providers work: their
Deployments are available, their webhook Services have endpoints and cert-manager injected their CA
(--wait-providers=false skips that). When the wait times out it says why.`

const initExample = `
  # Initialize a management cluster with the Docker infrastructure provider (latest releases)
  capctl init --infrastructure docker

  # Pin every version, as an enterprise rollout should
  capctl init --core cluster-api:v1.14.0 -b kubeadm:v1.14.0 -c kubeadm:v1.14.0 -i docker:v1.14.0

  # Add a second infrastructure provider later
  capctl init --infrastructure aws:v2.8.1

  # See what would be applied, checked by the API server, without changing anything
  capctl init -i docker --dry-run`

// newCmdInit builds `capctl init`; runF, when set, replaces running it (tests).
func newCmdInit(f *factory, runF func(*InitOptions) error) *cobra.Command {
	o := &InitOptions{deps: f.deps()}
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "init",
		Short:   "Initialize a management cluster",
		Long:    strings.TrimSpace(initLong),
		Example: strings.TrimSpace(initExample),
		Args:    cobra.NoArgs,
		RunE:    leafRun(o, o.complete, runF, runInit),
	}
	addProviderFlags(cmd, &o.Selection, &o.TargetNamespace)
	fl := cmd.Flags()
	fl.BoolVar(&o.WaitProviders, "wait-providers", true, "Wait until the providers work: Deployments available, webhook Services with endpoints, CA injected")
	secondsVar(fl, &o.WaitProviderTimeout, "wait-provider-timeout", clusterinit.DefaultWaitProviderTimeout, "Seconds to wait for the providers to work (with --wait-providers)")
	fl.BoolVar(&o.StrictChecks, "validate", true, "Refuse incompatible contracts, duplicate providers and misnamed CRDs; false logs the problems and goes on")
	fl.BoolVar(&o.DryRun, "dry-run", false, "Send every write as a server-side dry run and print what would be applied; nothing changes")
	addFormatFlag(cmd, &o.Output, "json and yaml print the result")
	cmd.AddCommand(newCmdInitListImages(f, nil))
	return cmd
}

// complete checks the request the flags filled, before any network or cluster call.
func (o *InitOptions) complete([]string) error {
	if err := o.InitRequest.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// runInit makes the one clusterinit.Init call and prints its result.
func runInit(ctx context.Context, o *InitOptions) error {
	e, err := o.env(ctx, multicluster.Selection{})
	if err != nil {
		return err
	}
	req := o.InitRequest
	req.Log = o.Logger()
	req.OnPlan = func(plan []clusterinit.Planned) { clusterinit.RenderResolved(o.IO.ErrOut, plan) }
	res, err := clusterinit.Init(ctx, e, req)
	if err != nil {
		return err
	}
	return output.Render(o.IO.Out, o.Output, res, func(w io.Writer) error { return clusterinit.RenderResult(w, res) })
}

// ListImagesOptions is `capctl init list-images` parsed from its flags.
type ListImagesOptions struct {
	deps
	providerFlags
	Output output.Format
}

const listImagesLong = `
List every container image the chosen providers (and cert-manager, when init would install it)
run, after the config file's image overrides, one per line. Nothing is installed.

Unlike clusterctl, no management cluster is needed: without a reachable one (or with
--kubeconfig "" and no kubeconfig file) the list is for a first init and includes cert-manager's
images, so an image mirror can be filled before the cluster exists.`

// newCmdInitListImages builds `capctl init list-images`; runF, when set, replaces running it.
func newCmdInitListImages(f *factory, runF func(*ListImagesOptions) error) *cobra.Command {
	o := &ListImagesOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "list-images",
		Short: "List the container images that init would run",
		Long:  strings.TrimSpace(listImagesLong),
		Example: strings.TrimSpace(`
  # Images of a first init with the Docker provider, pinned
  capctl init list-images --core cluster-api:v1.14.0 -b kubeadm:v1.14.0 -c kubeadm:v1.14.0 -i docker:v1.14.0`),
		Args: cobra.NoArgs,
		RunE: leafRun(o, o.complete, runF, runListImages),
	}
	o.add(cmd)
	addFormatFlag(cmd, &o.Output, "text prints one image per line")
	return cmd
}

// complete checks the request the flags filled, before any network or cluster call.
func (o *ListImagesOptions) complete([]string) error {
	if err := o.request().Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// runListImages makes the one clusterinit.ListImages call and prints the images.
func runListImages(ctx context.Context, o *ListImagesOptions) error {
	e, err := o.optionalEnv(ctx)
	if err != nil {
		return err
	}
	if len(e.Management) == 0 {
		fmt.Fprintln(o.IO.ErrOut, "No management cluster consulted: listing the images of a first init, cert-manager included.")
	}
	imgs, err := clusterinit.ListImages(ctx, e, o.request())
	if err != nil {
		return err
	}
	return output.Render(o.IO.Out, o.Output, imgs, func(w io.Writer) error { return clusterinit.RenderImages(w, imgs) })
}
