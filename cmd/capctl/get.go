package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/capctl/capctl/pkg/kubeconfig"
)

func init() { registerCommand(newGetCmd) }

func newGetCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "get",
		Short:   "Get info from a management or a workload cluster",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newGetKubeconfigCmd(f))
	return cmd
}

type getKubeconfigOptions struct {
	cluster   string
	namespace string
	writeTo   string
}

func newGetKubeconfigCmd(f *factory) *cobra.Command {
	o := &getKubeconfigOptions{}
	cmd := &cobra.Command{
		Use:   "kubeconfig CLUSTER",
		Short: "Print the kubeconfig of a workload cluster",
		Long: strings.TrimSpace(`
Print the kubeconfig of a workload cluster, read from the Secret <cluster>-kubeconfig (key "value")
that Cluster API writes in the cluster's namespace, or from <cluster>-user-kubeconfig where a
provider (EKS) writes a separate kubeconfig for users.`),
		Example: strings.TrimSpace(`
  # Print the kubeconfig of the workload cluster "capi-quickstart" in the current namespace
  capctl get kubeconfig capi-quickstart

  # Write it to a file readable only by you
  capctl get kubeconfig capi-quickstart -n fleet --write-to capi-quickstart.kubeconfig`),
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeClusterNames(cmd.Context(), f, o.namespace), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.cluster = args[0]
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context(), f)
		},
	}
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "Namespace of the workload cluster. If unspecified, the kubeconfig context's namespace")
	cmd.Flags().StringVar(&o.writeTo, "write-to", "", "Write the kubeconfig to this file (mode 0600) instead of printing it")
	return cmd
}

func (o *getKubeconfigOptions) validate() error {
	if errs := validation.IsDNS1123Subdomain(o.cluster); len(errs) > 0 {
		return usageErrorf("invalid cluster name %q: %s", o.cluster, strings.Join(errs, "; "))
	}
	if o.namespace != "" {
		if errs := validation.IsDNS1123Label(o.namespace); len(errs) > 0 {
			return usageErrorf("invalid namespace %q: %s", o.namespace, strings.Join(errs, "; "))
		}
	}
	return nil
}

func (o *getKubeconfigOptions) run(ctx context.Context, f *factory) error {
	c, err := f.Cluster(ctx)
	if err != nil {
		return err
	}
	ns := o.namespace
	if ns == "" {
		ns = c.Namespace
	}
	res, err := kubeconfig.Get(ctx, c, ns, o.cluster)
	if err != nil {
		return err
	}
	if o.writeTo != "" {
		if err := kubeconfig.WriteFile(o.writeTo, res.Data); err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "Wrote the kubeconfig of cluster %s/%s (Secret %s) to %s\n", ns, o.cluster, res.Secret, o.writeTo)
		return nil
	}
	data := res.Data
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	_, err = f.IO.Out.Write(data)
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
	if namespace == "" {
		namespace = c.Namespace
	}
	names, err := kubeconfig.ListClusters(ctx, c, namespace)
	if err != nil {
		return nil
	}
	return names
}
