package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/kubeconfig"
	"github.com/capctl/capctl/pkg/multicluster"
)

func newCmdGet(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "get",
		Short:   "Get info from a management or a workload cluster",
	}
	cmd.AddCommand(newCmdGetKubeconfig(f, nil), newCmdGetProviders(f, nil))
	return cmd
}

// GetKubeconfigOptions is `capctl get kubeconfig` parsed from its flags and argument.
type GetKubeconfigOptions struct {
	deps
	// Request is the one kubeconfig request: the cluster and its namespace.
	Request kubeconfig.GetRequest
	WriteTo string
}

const getKubeconfigLong = `
Print the kubeconfig of a workload cluster, read from the Secret <cluster>-kubeconfig (key "value")
that Cluster API writes in the cluster's namespace, or from <cluster>-user-kubeconfig where a
provider (EKS) writes a separate kubeconfig for users.`

const getKubeconfigExample = `
  # Print the kubeconfig of the workload cluster "capi-quickstart" in the current namespace
  capctl get kubeconfig capi-quickstart

  # Write it to a file readable only by you
  capctl get kubeconfig capi-quickstart -n fleet --write-to capi-quickstart.kubeconfig`

// newCmdGetKubeconfig builds `capctl get kubeconfig`; runF, when set, replaces running it.
func newCmdGetKubeconfig(f *factory, runF func(*GetKubeconfigOptions) error) *cobra.Command {
	o := &GetKubeconfigOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:     "kubeconfig CLUSTER",
		Short:   "Print the kubeconfig of a workload cluster",
		Long:    strings.TrimSpace(getKubeconfigLong),
		Example: strings.TrimSpace(getKubeconfigExample),
		Args:    cobra.ExactArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeClusterNames(cmd.Context(), f, o.Request.Namespace), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: leafRun(o, o.complete, runF, runGetKubeconfig),
	}
	cmd.Flags().StringVarP(&o.Request.Namespace, "namespace", "n", "", "Namespace of the workload cluster. If unspecified, the kubeconfig context's namespace")
	cmd.Flags().StringVar(&o.WriteTo, "write-to", "", "Write the kubeconfig to this file (mode 0600) instead of printing it")
	return cmd
}

// complete takes the cluster's name and checks it, before any cluster is contacted.
func (o *GetKubeconfigOptions) complete(args []string) error {
	o.Request.Cluster = args[0]
	if err := o.Request.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// runGetKubeconfig makes the one kubeconfig.Run call and prints or writes the kubeconfig.
func runGetKubeconfig(ctx context.Context, o *GetKubeconfigOptions) error {
	e, err := o.env(ctx, multicluster.Selection{})
	if err != nil {
		return err
	}
	res, err := kubeconfig.Run(ctx, e, o.Request)
	if err != nil {
		return err
	}
	if o.WriteTo != "" {
		if err := kubeconfig.WriteFile(o.WriteTo, res.Data); err != nil {
			return err
		}
		fmt.Fprintf(o.IO.ErrOut, "Wrote the kubeconfig of cluster %s/%s (Secret %s) to %s\n", res.Namespace, res.Cluster, res.Secret, o.WriteTo)
		return nil
	}
	data := res.Data
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	_, err = o.IO.Out.Write(data)
	return err
}

// completeClusterNames suggests the Clusters of the namespace (the context's when empty).
func completeClusterNames(ctx context.Context, f *factory, namespace string) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := f.Cluster(ctx)
	if err != nil {
		return nil
	}
	res, err := kubeconfig.Clusters(ctx, env.One(c), kubeconfig.ClustersRequest{Namespace: namespace})
	if err != nil {
		return nil
	}
	return res.Names
}
