package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cani"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/multicluster"
)

// newCmdAuth builds `capctl auth` and its subcommands.
func newCmdAuth(f *factory) *cobra.Command {
	auth := &cobra.Command{Use: "auth", Short: "Check what your credentials allow capctl to do"}
	auth.AddCommand(newCmdAuthCanI(f, nil))
	return auth
}

// AuthCanIOptions is `capctl auth can-i COMMAND`.
type AuthCanIOptions struct {
	deps
	Request      authz.CanIRequest
	ToKubeconfig string
	ToContext    string
	Output       output.Format
}

func newCmdAuthCanI(f *factory, runF func(*AuthCanIOptions) error) *cobra.Command {
	o := &AuthCanIOptions{deps: f.deps()}
	var names []string
	for _, c := range authz.Commands {
		names = append(names, c.Name)
	}
	cmd := &cobra.Command{
		Use:   "can-i COMMAND",
		Short: "Check, without changing anything, that you have every permission a command needs",
		Long: strings.TrimSpace(`
Ask the clusters (SelfSubjectAccessReview) for every verb and kind the command uses, from the same
table its own preflight checks (docs/guides/permissions.md), and print what is missing with a
ready Role/ClusterRole. Commands: ` + strings.Join(names, ", ") + `. Exit code 1 when something is missing.`),
		Example: strings.TrimSpace(`
  capctl auth can-i delete
  capctl auth can-i move -n team-a --to-kubeconfig target.kubeconfig`),
		Args: cobra.MinimumNArgs(1),
		RunE: leafRun(o, o.complete, runF, runAuthCanI),
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Request.Namespace, "namespace", "n", "", "The namespace the command would work on (default: the context's)")
	fl.StringVar(&o.ToKubeconfig, "to-kubeconfig", "", "The target cluster's kubeconfig (move)")
	fl.StringVar(&o.ToContext, "to-kubeconfig-context", "", "The context of --to-kubeconfig")
	addFormatFlag(cmd, &o.Output, "json and yaml print the missing permissions per cluster")
	return cmd
}

// complete takes the command to check from the arguments; it must be one capctl knows.
func (o *AuthCanIOptions) complete(args []string) error {
	o.Request.Command = strings.Join(args, " ")
	if _, err := authz.Lookup(o.Request.Command); err != nil {
		return usageError{err}
	}
	return nil
}

// runAuthCanI asks the clusters for the command's permissions and prints what is missing.
func runAuthCanI(ctx context.Context, o *AuthCanIOptions) error {
	e, err := o.env(ctx, multicluster.Selection{})
	if err != nil {
		return err
	}
	if o.ToKubeconfig != "" {
		if e.Target, err = cluster.Connect(ctx, cluster.Options{Kubeconfig: o.ToKubeconfig, Context: o.ToContext}); err != nil {
			return err
		}
	}
	res, err := cani.Run(ctx, e, o.Request)
	if err != nil {
		return err
	}
	if err := output.Render(o.IO.Out, o.Output, res, func(w io.Writer) error { return res.Render(w) }); err != nil {
		return err
	}
	if !res.OK() {
		return exitCodeError{code: 1}
	}
	return nil
}
