// Package mcpserver is `capctl mcp`: a Model Context Protocol server (the official Go SDK) whose
// tools are capctl's read-only commands. It is a front end beside cmd/capctl: each tool parses
// its arguments into the command's request, makes the command's one verb call and returns the
// command's JSON (what `-o json` prints).
//
// Read-only by construction: the Env's management cluster clients are built with
// cluster.Options.ReadOnly, which refuses every request but reads, self-reviews and server-side
// dry runs before it is sent; no tool takes a path to write (no --save), and no writing command
// is a tool.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cani"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/cutover"
	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/move"
	"github.com/capctl/capctl/pkg/topology"
	"github.com/capctl/capctl/pkg/upgrade"
)

// Request is `capctl mcp`.
type Request struct {
	// HTTP, when set, serves MCP's streamable HTTP transport at this loopback address
	// (host:port; port 0 picks one) instead of stdio.
	HTTP string
	// Stdio is the transport when HTTP is empty (the command's standard input and output).
	Stdio mcp.Transport
	// Source is how the management cluster is reached, for the one tool that connects by
	// itself (move's replacement plan reaches a second cluster); ReadOnly is forced.
	Source cluster.Options
	// Version is the server's version in the MCP handshake.
	Version string
	// Listening, when set, is told the HTTP address once the server listens.
	Listening func(addr string)
	// Bundle, when set, is the support bundle the Env replays (--from-bundle): only the tools a
	// bundle answers are served (Replayable), and the diagnoses read the workload clusters
	// through Workloads, the bundle's record of them.
	Bundle    string
	Workloads diagnose.WorkloadFunc
}

// Replayable are the tools a support bundle answers: the views whose reads it recorded.
var Replayable = []string{"describe_cluster", "describe_clusters", "diagnose_cluster", "diagnose_clusters", "get_providers"}

// Several are the tools that work over several management clusters (an Env of --contexts, or a
// bundle of several): their commands take --contexts.
var Several = []string{"describe_clusters", "diagnose_clusters", "get_providers", "upgrade_plan", "topology_plan"}

// Validate checks the request before anything listens.
func (r Request) Validate() error {
	if r.HTTP == "" {
		if r.Stdio == nil {
			return errors.New("no transport: serve stdio or pass --http ADDRESS")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(r.HTTP)
	if err != nil {
		return fmt.Errorf("--http %q: want HOST:PORT (a loopback host): %w", r.HTTP, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--http %q: the server has no authentication, so it listens on a loopback address only (127.0.0.1:PORT)", r.HTTP)
	}
	return nil
}

// Result is what a served session did.
type Result struct {
	// Addr is where the HTTP transport listened ("" on stdio).
	Addr string `json:"addr,omitempty"`
}

// Run serves until the client ends the session (stdio) or ctx is done (HTTP).
func Run(ctx context.Context, e env.Env, req Request) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	s := NewServer(e, req)
	if req.HTTP == "" {
		if err := s.Run(ctx, req.Stdio); err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
		return &Result{}, nil
	}
	ln, err := net.Listen("tcp", req.HTTP)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", req.HTTP, err)
	}
	addr := ln.Addr().String()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if req.Listening != nil {
		req.Listening(addr)
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return nil, err
	}
	return &Result{Addr: addr}, nil
}

// NewServer is the MCP server with every tool over e (tests connect it in memory).
func NewServer(e env.Env, req Request) *mcp.Server {
	version := req.Version
	if version == "" {
		version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "capctl", Title: "capctl (read-only)", Version: version}, &mcp.ServerOptions{
		Instructions: "Read-only tools over a Cluster API management cluster: describe and diagnose workload clusters, providers, upgrade and topology plans, the v1beta1 cut-over check, permissions. Every tool returns the JSON that the capctl command prints with -o json. None changes anything.",
	})
	t := tools{e: e, source: req.Source, workloads: req.Workloads}
	t.source.ReadOnly = true
	r := registry{s: s}
	if req.Bundle != "" {
		r.only = Replayable
	}
	if e.Several() {
		r.only = slices.DeleteFunc(slices.Clone(Several), func(name string) bool { return r.only != nil && !slices.Contains(r.only, name) })
	}
	t.register(r)
	return s
}

// registry is where the tools are added: the server, and the tools it serves (nil: every one).
type registry struct {
	s    *mcp.Server
	only []string
}

// tools holds what the tool handlers share.
type tools struct {
	e         env.Env
	source    cluster.Options
	workloads diagnose.WorkloadFunc
}

// diagnosis is the commands' diagnose request over the tools' clock and workload reads.
func (t tools) diagnosis(namespace, name string) diagnose.ClusterRequest {
	req := diagnose.DefaultClusterRequest(namespace, name)
	req.Now, req.Workloads = t.e.Clock, t.workloads
	return req
}

// readOnly are the annotations of every tool.
func readOnly(title string) *mcp.ToolAnnotations {
	closed := false
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &closed}
}

// add registers one tool: In is its arguments (their JSON schema is inferred from the struct),
// run makes the command's verb call; the result is the command's JSON.
func add[In any](r registry, name, title, desc string, run func(context.Context, In) (any, error)) {
	if r.only != nil && !slices.Contains(r.only, name) {
		return
	}
	mcp.AddTool(r.s, &mcp.Tool{Name: name, Description: desc, Annotations: readOnly(title)},
		func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
			v, err := run(ctx, in)
			if err != nil {
				return nil, nil, err
			}
			var buf bytes.Buffer
			if err := output.WriteStructured(&buf, output.JSON, v); err != nil {
				return nil, nil, err
			}
			out := bytes.TrimSpace(buf.Bytes())
			if !bytes.HasPrefix(out, []byte("{")) {
				// MCP's structured content is an object: a command that prints a list (or
				// null) gives its JSON as text only.
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil, nil
			}
			return nil, json.RawMessage(out), nil
		})
}

// Arguments of the tools.
type (
	// ClusterArgs name one workload cluster.
	ClusterArgs struct {
		Name      string `json:"name" jsonschema:"the Cluster's name"`
		Namespace string `json:"namespace,omitempty" jsonschema:"the Cluster's namespace (default: the kubeconfig context's)"`
	}
	// ClustersArgs select the workload clusters.
	ClustersArgs struct {
		Namespace     string `json:"namespace,omitempty" jsonschema:"only this namespace (default: the kubeconfig context's)"`
		AllNamespaces bool   `json:"allNamespaces,omitempty" jsonschema:"every namespace"`
	}
	// NoArgs is a tool without arguments.
	NoArgs struct{}
	// HistoryArgs name one rollout, or none for the list.
	HistoryArgs struct {
		Name string `json:"name,omitempty" jsonschema:"one rollout's name (default: the list of rollouts)"`
	}
	// TopologyPlanArgs are the changed objects, as YAML text.
	TopologyPlanArgs struct {
		Manifests     string `json:"manifests" jsonschema:"the changed or new ClusterClasses, templates and Clusters at v1beta2, as multi-document YAML"`
		Namespace     string `json:"namespace,omitempty" jsonschema:"plan only the clusters of this namespace"`
		AllNamespaces bool   `json:"allNamespaces,omitempty" jsonschema:"plan the clusters of every namespace the change reaches"`
		Diff          bool   `json:"diff,omitempty" jsonschema:"include each change's unified diff"`
	}
	// ReplacementArgs name the management cluster that would replace this one.
	ReplacementArgs struct {
		ToKubeconfig  string `json:"toKubeconfig" jsonschema:"path of the kubeconfig of the new management cluster, on the server's machine"`
		ToContext     string `json:"toContext,omitempty" jsonschema:"context of toKubeconfig (default: its current context)"`
		Namespace     string `json:"namespace,omitempty" jsonschema:"the namespace whose clusters would move (default: the kubeconfig context's)"`
		AllNamespaces bool   `json:"allNamespaces,omitempty" jsonschema:"every namespace"`
	}
	// CanIArgs name a capctl command.
	CanIArgs struct {
		Command   string `json:"command" jsonschema:"the capctl command, e.g. 'move', 'upgrade apply', 'delete'"`
		Namespace string `json:"namespace,omitempty" jsonschema:"the namespace it would work on (default: the kubeconfig context's)"`
	}
	// CutoverArgs are optional manifests to check beside the management cluster.
	CutoverArgs struct {
		Manifests string `json:"manifests,omitempty" jsonschema:"optional multi-document YAML (manifests from Git) to check too"`
	}
)

func (t tools) register(s registry) {
	add(s, "describe_cluster", "Describe a cluster", "The object tree of one workload cluster with its conditions (capctl describe cluster NAME -o json).",
		func(ctx context.Context, a ClusterArgs) (any, error) {
			req := describe.ClusterRequest{Name: a.Name, Namespace: a.Namespace, Grouping: true}
			if err := req.Validate(); err != nil {
				return nil, err
			}
			return describe.RunCluster(ctx, t.e, req)
		})
	add(s, "describe_clusters", "Describe the fleet", "One row per workload cluster: version, phase, Available, machines (capctl describe clusters -o json).",
		func(ctx context.Context, a ClustersArgs) (any, error) {
			return describe.RunClusters(ctx, t.e, describe.SummaryRequest{Namespace: a.Namespace, AllNamespaces: a.AllNamespaces})
		})
	add(s, "diagnose_cluster", "Diagnose a cluster", "Why one workload cluster is stuck: findings with the responsible provider and the next commands (capctl diagnose cluster NAME -o json).",
		func(ctx context.Context, a ClusterArgs) (any, error) {
			req := t.diagnosis(a.Namespace, a.Name)
			if err := req.Validate(); err != nil {
				return nil, err
			}
			return diagnose.RunCluster(ctx, t.e, req)
		})
	add(s, "diagnose_clusters", "Diagnose the fleet", "Every workload cluster's diagnosis, problems first (capctl diagnose clusters -o json).",
		func(ctx context.Context, a ClustersArgs) (any, error) {
			req := diagnose.ClustersRequest{ClusterRequest: t.diagnosis(a.Namespace, ""), AllNamespaces: a.AllNamespaces, Concurrency: diagnose.DefaultConcurrency}
			return diagnose.RunClusters(ctx, t.e, req)
		})
	add(s, "get_providers", "Providers", "The installed providers with their contract, controller, webhook and cert-manager state (capctl get providers -o json).",
		func(ctx context.Context, _ NoArgs) (any, error) {
			return diagnose.GetProviders(ctx, t.e, diagnose.GetProvidersRequest{})
		})
	add(s, "upgrade_plan", "Provider upgrade plan", "The provider versions an upgrade would go to, per contract (capctl upgrade plan -o json; nothing is saved).",
		func(ctx context.Context, _ NoArgs) (any, error) {
			return upgrade.RunPlan(ctx, t.e, upgrade.PlanRequest{})
		})
	add(s, "upgrade_history", "Rollout history", "The fleet rollouts recorded on the management cluster, or one of them (capctl upgrade history [NAME] -o json).",
		func(ctx context.Context, a HistoryArgs) (any, error) {
			return fleetupgrade.RunHistory(ctx, t.e, fleetupgrade.HistoryRequest{Name: a.Name})
		})
	add(s, "topology_plan", "ClusterClass change preview", "What a ClusterClass, template or Cluster change does to every cluster it reaches, computed by Cluster API's topology code with server-side dry runs (capctl topology plan -f - -o json; nothing is saved).",
		func(ctx context.Context, a TopologyPlanArgs) (any, error) {
			req := topology.PlanRequest{Files: []string{"-"}, Stdin: strings.NewReader(a.Manifests), Namespace: a.Namespace, AllNamespaces: a.AllNamespaces, Diff: a.Diff, Concurrency: topology.DefaultConcurrency}
			if err := req.Validate(); err != nil {
				return nil, err
			}
			return topology.Plan(ctx, t.e, req)
		})
	add(s, "move_plan_replacement", "Blue/green runbook", "The runbook for replacing this management cluster by another: contract jump, providers the new one needs, what moves and what conversion would lose (capctl move --plan-replacement -o json).",
		func(ctx context.Context, a ReplacementArgs) (any, error) {
			target := cluster.Options{Kubeconfig: a.ToKubeconfig, Context: a.ToContext, KubeconfigFlag: "toKubeconfig", ReadOnly: true}
			fl := move.Flags{Source: t.source, Target: &target, PlanReplacement: true,
				Options: move.Options{Scope: move.Scope{Namespace: a.Namespace, AllNamespaces: a.AllNamespaces}, Log: logging.Discard()}}
			req, err := fl.Request()
			if err != nil {
				return nil, err
			}
			res, err := move.Run(ctx, fl.Connections(), req)
			if err != nil {
				return nil, err
			}
			return res.Replacement, nil
		})
	add(s, "auth_can_i", "Permissions check", "Whether the kubeconfig's identity has every permission a capctl command needs, and which are missing (capctl auth can-i COMMAND -o json).",
		func(ctx context.Context, a CanIArgs) (any, error) {
			if _, err := authz.Lookup(a.Command); err != nil {
				return nil, err
			}
			return cani.Run(ctx, t.e, authz.CanIRequest{Command: a.Command, Namespace: a.Namespace})
		})
	add(s, "diagnose_v1beta1", "v1beta1 cut-over check", "What still depends on Cluster API's v1beta1 API (storage, providers, ClusterClass patches, and the given manifests), each with its fix (capctl diagnose v1beta1 -o json).",
		func(ctx context.Context, a CutoverArgs) (any, error) {
			req := cutover.Request{}
			if a.Manifests != "" {
				req.Files, req.Stdin = []string{"-"}, strings.NewReader(a.Manifests)
			}
			return cutover.Run(ctx, t.e, req)
		})
}
