package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/cluster"
	initialize "github.com/capctl/capctl/pkg/init"
)

func init() { registerCommand(newInitCmd) }

// providerFlags are the provider selection flags shared by init and init list-images.
type providerFlags struct {
	sel             initialize.Selection
	targetNamespace string
}

func (p *providerFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&p.sel.Core, "core", "", "Core provider version (e.g. cluster-api:v1.14.0) to add to the management cluster. If unspecified on a first init, Cluster API's latest release is used")
	fl.StringSliceVarP(&p.sel.Bootstrap, "bootstrap", "b", nil, "Bootstrap providers and versions (e.g. kubeadm:v1.14.0) to add. If unspecified on a first init, kubeadm's latest release is used; '-' adds none")
	fl.StringSliceVarP(&p.sel.ControlPlane, "control-plane", "c", nil, "Control plane providers and versions (e.g. kubeadm:v1.14.0) to add. If unspecified on a first init, kubeadm's latest release is used; '-' adds none")
	fl.StringSliceVarP(&p.sel.Infrastructure, "infrastructure", "i", nil, "Infrastructure providers and versions (e.g. aws:v2.8.1) to add")
	fl.StringSliceVar(&p.sel.IPAM, "ipam", nil, "IPAM providers and versions (e.g. in-cluster:v1.0.0) to add")
	fl.StringSliceVar(&p.sel.RuntimeExtension, "runtime-extension", nil, "Runtime extension providers and versions to add")
	fl.StringSliceVar(&p.sel.Addon, "addon", nil, "Add-on providers and versions (e.g. helm:v0.3.2) to add")
	fl.StringVarP(&p.targetNamespace, "target-namespace", "n", "", "The namespace where the providers of this run are installed. If unspecified, each provider's default namespace")
}

// validate checks the selection without any network or cluster call.
func (p *providerFlags) validate() error {
	if _, err := initialize.ParseRequests(p.sel); err != nil {
		return usageErrorf("%v", err)
	}
	if p.targetNamespace != "" {
		if errs := validation.IsDNS1123Label(p.targetNamespace); len(errs) > 0 {
			return usageErrorf("--target-namespace %q: %s", p.targetNamespace, strings.Join(errs, "; "))
		}
	}
	return nil
}

type initOptions struct {
	providerFlags
	waitProviders       bool
	waitProviderTimeout int
	validate            bool
	dryRun              bool
	output              output.Format
}

func newInitCmd(f *factory) *cobra.Command {
	o := &initOptions{}
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "init",
		Short:   "Initialize a management cluster",
		Long: strings.TrimSpace(`
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
(--wait-providers=false skips that). When the wait times out it says why.`),
		Example: strings.TrimSpace(`
  # Initialize a management cluster with the Docker infrastructure provider (latest releases)
  capctl init --infrastructure docker

  # Pin every version, as an enterprise rollout should
  capctl init --core cluster-api:v1.14.0 -b kubeadm:v1.14.0 -c kubeadm:v1.14.0 -i docker:v1.14.0

  # Add a second infrastructure provider later
  capctl init --infrastructure aws:v2.8.1

  # See what would be applied, checked by the API server, without changing anything
  capctl init -i docker --dry-run`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validateFlags(); err != nil {
				return err
			}
			return o.run(cmd.Context(), f)
		},
	}
	o.add(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&o.waitProviders, "wait-providers", true, "Wait until the providers work: Deployments available, webhook Services with endpoints, CA injected")
	fl.IntVar(&o.waitProviderTimeout, "wait-provider-timeout", 300, "Seconds to wait for the providers to work (with --wait-providers)")
	fl.BoolVar(&o.validate, "validate", true, "Refuse incompatible contracts, duplicate providers and misnamed CRDs; false logs the problems and goes on")
	fl.BoolVar(&o.dryRun, "dry-run", false, "Send every write as a server-side dry run and print what would be applied; nothing changes")
	output.AddFormatFlag(cmd, &o.output, "json and yaml print the result")
	cmd.AddCommand(newInitListImagesCmd(f))
	return cmd
}

func (o *initOptions) validateFlags() error {
	if err := o.providerFlags.validate(); err != nil {
		return err
	}
	if o.waitProviderTimeout <= 0 {
		return usageErrorf("--wait-provider-timeout must be a positive number of seconds, not %d", o.waitProviderTimeout)
	}
	return nil
}

func (o *initOptions) run(ctx context.Context, f *factory) error {
	cfg, err := f.Config(ctx)
	if err != nil {
		return err
	}
	repo, err := f.repositoryClient(ctx, false)
	if err != nil {
		return err
	}
	c, err := f.Cluster(ctx)
	if err != nil {
		return err
	}
	log := f.Logger()
	res, err := initialize.Init(ctx, initialize.Clients{Cluster: c, Repo: repo, Config: cfg}, initialize.Options{
		Selection:           o.sel,
		TargetNamespace:     o.targetNamespace,
		WaitProviders:       o.waitProviders,
		WaitProviderTimeout: time.Duration(o.waitProviderTimeout) * time.Second,
		Validate:            o.validate,
		DryRun:              o.dryRun,
		Log:                 log,
		OnPlan: func(plan []initialize.Planned) {
			fmt.Fprintln(f.IO.ErrOut, "Resolved providers:")
			renderInitPlan(f.IO.ErrOut, plan, false)
		},
	})
	if err != nil {
		return err
	}
	return renderInitResult(f.IO.Out, res, o.output)
}

// renderInitPlan prints one row per provider.
func renderInitPlan(w io.Writer, plan []initialize.Planned, done bool) {
	t := output.NewTable(w, "NAME", "TYPE", "VERSION", "NAMESPACE", "CONTRACT", "ACTION")
	for _, p := range plan {
		action := string(p.Action)
		switch {
		case p.Action == initialize.ActionInstall && p.Default:
			action = "install (first-init default)"
		case p.Action == initialize.ActionAlreadyThere:
			action = "already installed, skipped"
		case p.Action == initialize.ActionWouldInstall:
			action = fmt.Sprintf("would apply %d objects", p.Objects)
			if p.Unchecked > 0 {
				action += fmt.Sprintf(" (%d not checkable yet)", p.Unchecked)
			}
		case done && p.Action == initialize.ActionInstalled:
			action = fmt.Sprintf("installed (%d objects)", p.Objects)
		}
		t.Row(p.Label(), string(p.Type), p.Version, p.Namespace, p.Contract, action)
	}
	_ = t.Flush()
}

func renderInitResult(w io.Writer, res *initialize.Result, format output.Format) error {
	if format.Structured() {
		return output.WriteStructured(w, format, res)
	}
	if res.NoOp {
		names := make([]string, 0, len(res.Providers))
		for _, p := range res.Providers {
			names = append(names, fmt.Sprintf("%s %s in %s", p.Label(), p.Version, p.Namespace))
		}
		fmt.Fprintf(w, "Nothing to do: every requested provider is already installed at that version (%s).\n", strings.Join(names, ", "))
		return nil
	}
	renderInitPlan(w, res.Providers, true)
	if cm := res.CertManager; cm != nil {
		switch cm.Action {
		case certmanager.ActionInstalled:
			fmt.Fprintf(w, "cert-manager %s installed (%d objects).\n", cm.Version, cm.Applied)
		case certmanager.ActionAlreadyWorking:
			fmt.Fprintln(w, "cert-manager was already installed and working; left as it is.")
		case certmanager.ActionExternal:
			fmt.Fprintln(w, "cert-manager is externally provisioned and working.")
		case certmanager.ActionWouldInstall:
			fmt.Fprintf(w, "cert-manager %s would be installed (%d objects).\n", cm.Version, cm.Applied)
		case certmanager.ActionWouldSkip:
			fmt.Fprintln(w, "cert-manager appears to be installed; it would not be touched.")
		}
	}
	if res.DryRun {
		fmt.Fprintln(w, "\nDry run: nothing was changed. The API server checked every object it could; objects whose namespace or CRD does not exist yet could only be checked locally.")
		return nil
	}
	if res.FirstRun {
		fmt.Fprint(w, `
Your management cluster has been initialized successfully!

You can now create your first workload cluster by running the following:

  capctl generate cluster [name] --kubernetes-version [version] | kubectl apply -f -
`)
		return nil
	}
	fmt.Fprintln(w, "\nThe providers were added to the management cluster successfully.")
	return nil
}

type listImagesOptions struct {
	providerFlags
	output output.Format
}

func newInitListImagesCmd(f *factory) *cobra.Command {
	o := &listImagesOptions{}
	cmd := &cobra.Command{
		Use:   "list-images",
		Short: "List the container images that init would run",
		Long: strings.TrimSpace(`
List every container image the chosen providers (and cert-manager, when init would install it)
run, after the config file's image overrides, one per line. Nothing is installed.

Unlike clusterctl, no management cluster is needed: without a reachable one (or with
--kubeconfig "" and no kubeconfig file) the list is for a first init and includes cert-manager's
images, so an image mirror can be filled before the cluster exists.`),
		Example: strings.TrimSpace(`
  # Images of a first init with the Docker provider, pinned
  capctl init list-images --core cluster-api:v1.14.0 -b kubeadm:v1.14.0 -c kubeadm:v1.14.0 -i docker:v1.14.0`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.providerFlags.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context(), f)
		},
	}
	o.add(cmd)
	output.AddFormatFlag(cmd, &o.output, "text prints one image per line")
	return cmd
}

func (o *listImagesOptions) run(ctx context.Context, f *factory) error {
	cfg, err := f.Config(ctx)
	if err != nil {
		return err
	}
	repo, err := f.repositoryClient(ctx, false)
	if err != nil {
		return err
	}
	cl := initialize.Clients{Repo: repo, Config: cfg}
	cl.Cluster, err = optionalCluster(ctx, f)
	if err != nil {
		return err
	}
	if cl.Cluster == nil {
		fmt.Fprintln(f.IO.ErrOut, "No management cluster consulted: listing the images of a first init, cert-manager included.")
	}
	imgs, err := initialize.ListImages(ctx, cl, initialize.ImagesOptions{Selection: o.sel, TargetNamespace: o.targetNamespace})
	if err != nil {
		return err
	}
	if o.output.Structured() {
		return output.WriteStructured(f.IO.Out, o.output, imgs)
	}
	for _, i := range imgs.Images {
		fmt.Fprintln(f.IO.Out, i)
	}
	return nil
}

// optionalCluster connects when a management cluster is named (--kubeconfig or
// --kubeconfig-context: then failures are errors) or a default kubeconfig answers; otherwise it
// returns nil.
func optionalCluster(ctx context.Context, f *factory) (*cluster.Client, error) {
	explicit := f.global.kubeconfig != "" || f.global.kubeconfigContext != ""
	c, err := f.Cluster(ctx)
	if err == nil {
		return c, nil
	}
	if explicit {
		return nil, err
	}
	if errors.Is(err, cluster.ErrUnreachable) {
		fmt.Fprintf(f.IO.ErrOut, "Note: %v\n", err)
	}
	return nil, nil
}
