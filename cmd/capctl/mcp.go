package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/internal/version"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/mcpserver"
	"github.com/capctl/capctl/pkg/multicluster"
)

// MCPOptions are the flags of `capctl mcp`: Request is the one request.
type MCPOptions struct {
	deps
	mcpserver.Request
	FromBundle fromBundle
	// Contexts are the management clusters of --contexts/--all-contexts.
	Contexts multicluster.Selection

	flags *pflag.FlagSet
}

func newCmdMCP(f *factory, runF func(*MCPOptions) error) *cobra.Command {
	o := &MCPOptions{deps: f.deps()}
	cmd := &cobra.Command{
		GroupID: groupTroubleshooting,
		Use:     "mcp",
		Short:   "Serve capctl's read-only commands to an AI assistant as a Model Context Protocol server",
		Long: strings.TrimSpace(`
Serve a Model Context Protocol (MCP) server whose tools are capctl's read-only commands on the
management cluster of the kubeconfig: describe_cluster, describe_clusters, diagnose_cluster,
diagnose_clusters, get_providers, upgrade_plan, upgrade_history, topology_plan (preview),
move_plan_replacement, auth_can_i and diagnose_v1beta1. Each tool takes the command's options as
JSON arguments (with a JSON schema) and returns the JSON the command prints with -o json.

Read-only by construction: the server's Kubernetes clients refuse, before sending, every request
but reads, self-reviews (auth can-i) and server-side dry runs (topology plan); no tool writes a
file. The identity is the kubeconfig's: give the server a kubeconfig with read permissions only
to be sure twice.

By default the server speaks over standard input and output (how assistants start local MCP
servers); --http serves the streamable HTTP transport on a loopback address instead.

With --from-bundle FILE the server answers from a support bundle (capctl diagnose bundle), with
no kubeconfig: the tools a bundle answers (describe_cluster, describe_clusters,
diagnose_cluster, diagnose_clusters, get_providers), as the cluster was when it was made.

With --contexts a,b or --all-contexts the tools that work over several management clusters
(describe_clusters, diagnose_clusters, get_providers, upgrade_plan, topology_plan) are served
over them, each answer one view naming every row's management cluster.`),
		Example: strings.TrimSpace(`
  # register with an assistant that starts local servers (its MCP configuration):
  #   {"mcpServers": {"capctl": {"command": "capctl", "args": ["mcp", "--kubeconfig", "/home/me/.kube/mgmt"]}}}
  capctl mcp
  capctl mcp --http 127.0.0.1:8765
  capctl mcp --from-bundle support.tar.gz`),
		Args: cobra.NoArgs,
	}
	cmd.RunE = leafRun(o, o.complete, runF, runMCP)
	cmd.Flags().StringVar(&o.HTTP, "http", "", "Serve the streamable HTTP transport at this loopback address (127.0.0.1:PORT) instead of standard input and output")
	addFromBundleFlag(cmd, &o.FromBundle)
	addContextsFlags(cmd, &o.Contexts)
	o.flags = cmd.Flags()
	return cmd
}

// complete fills the transport and the server's version, and checks the request.
func (o *MCPOptions) complete([]string) error {
	if o.HTTP == "" {
		o.Stdio = &mcp.IOTransport{Reader: io.NopCloser(o.IO.In), Writer: nopWriteCloser{o.IO.Out}}
	}
	o.Version = version.Get().GitVersion
	if err := o.Request.Validate(); err != nil {
		return usageError{err}
	}
	if err := checkContextsFlags(o.flags, o.Contexts); err != nil {
		return err
	}
	return o.FromBundle.check(o.flags)
}

// runMCP connects to the management cluster read-only, or opens the bundle of --from-bundle,
// and serves until the session ends.
func runMCP(ctx context.Context, o *MCPOptions) error {
	if o.HTTP != "" {
		o.Listening = func(addr string) {
			fmt.Fprintf(o.IO.ErrOut, "capctl mcp: serving MCP at http://%s/ (read-only; Ctrl-C stops)\n", addr)
		}
	}
	var e env.Env
	if o.FromBundle.Path != "" {
		var err error
		if e, err = o.FromBundle.env(ctx, o.deps, multicluster.Selection{}, nil); err != nil {
			return err
		}
		if o.Workloads, err = o.FromBundle.workloads(); err != nil {
			return err
		}
		o.Bundle = o.FromBundle.Path
	} else {
		opts := o.ClusterOptions()
		opts.ReadOnly = true
		var err error
		e, err = env.Open(ctx, o.Contexts,
			func(ctx context.Context) (*cluster.Client, error) { return cluster.Connect(ctx, opts) },
			func(ctx context.Context, sel multicluster.Selection) ([]multicluster.Member, error) {
				several := opts
				several.Context = ""
				return multicluster.Open(ctx, several, sel)
			})
		if err != nil {
			return err
		}
		o.wire(&e)
		o.Source = opts
	}
	_, err := mcpserver.Run(ctx, e, o.Request)
	return err
}

// nopWriteCloser leaves the command's standard output open when the transport closes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
