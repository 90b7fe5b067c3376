package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/multicluster"
)

// GetProvidersOptions are the flags of `get providers`.
type GetProvidersOptions struct {
	deps
	Output output.Format
	// Contexts are the management clusters of --contexts/--all-contexts.
	Contexts multicluster.Selection

	flags *pflag.FlagSet
}

func newCmdGetProviders(f *factory, runF func(*GetProvidersOptions) error) *cobra.Command {
	o := &GetProvidersOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "List the installed providers with their contract, controller, webhook and concurrency flags",
		Long: strings.TrimSpace(`
List the providers of the management cluster's inventory with their type, version and namespace,
the Cluster API contract their CRDs declare (labels cluster.x-k8s.io/<contract>), whether their
controller Deployment is available and their webhook answers (Service with ready endpoints, CA
injected), and the --*-concurrency flags their controllers run with. cert-manager's state follows.

A kind you may not read (RBAC) does not stop it: what could be read is shown, the checks that
needed the kind say "not checked", the kinds are named (json/yaml: unread), and the exit code is
3 (the view is partial). Exit codes: 0 complete view, 3 partial view or an unreadable management
cluster, 1 failure.`),
		Example: strings.TrimSpace(`
  capctl get providers
  capctl get providers -o yaml
  capctl get providers --all-contexts`),
		Args: cobra.NoArgs,
	}
	cmd.RunE = leafRun(o, o.complete, runF, runGetProviders)
	o.flags = cmd.Flags()
	addFormatFlag(cmd, &o.Output, "json and yaml print every provider with its Deployments and webhook checks")
	addContextsFlags(cmd, &o.Contexts)
	return cmd
}

// complete checks the management clusters chosen, before any is contacted.
func (o *GetProvidersOptions) complete([]string) error {
	return checkContextsFlags(o.flags, o.Contexts)
}

// runGetProviders makes the one diagnose.GetProviders call and prints its result.
func runGetProviders(ctx context.Context, o *GetProvidersOptions) error {
	e, err := o.env(ctx, o.Contexts)
	if err != nil {
		return err
	}
	res, err := diagnose.GetProviders(ctx, e, diagnose.GetProvidersRequest{})
	if err != nil {
		return err
	}
	if err := output.Render(o.IO.Out, o.Output, res, res.RenderText); err != nil {
		return err
	}
	return exitCode(res.ExitCode())
}
