package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/plugin"
)

// Command groups, as clusterctl shows them in help.
const (
	groupManagement      = "management"
	groupTroubleshooting = "troubleshooting"
	groupOther           = "other"
)

// commandBuilders are the top-level commands; each command file adds its own in an init func so
// that adding a command never edits a shared list.
var commandBuilders []func(*factory) *cobra.Command

func registerCommand(b func(*factory) *cobra.Command) { commandBuilders = append(commandBuilders, b) }

func newRootCmd(f *factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "capctl",
		Short: "capctl controls the lifecycle of a Cluster API management cluster",
		Long: strings.TrimSpace(`
capctl controls the lifecycle of a Cluster API management cluster.

It reads clusterctl's configuration file, local repositories and provider inventory, so it can be
used in place of clusterctl on the same management clusters.`),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetHelpCommandGroupID(groupOther)
	root.SetCompletionCommandGroupID(groupOther)

	userinput.SetMax(0) // each run starts from the default; --max-input-size raises it
	pf := root.PersistentFlags()
	pf.StringVar(&f.global.kubeconfig, "kubeconfig", "",
		"Path to the kubeconfig file of the management cluster. If unspecified, the KUBECONFIG list, then ~/.kube/config")
	pf.StringVar(&f.global.kubeconfigContext, "kubeconfig-context", "",
		"Context of the management cluster in the kubeconfig file. If unspecified, the current context")
	pf.StringVar(&f.global.configPath, "config", "",
		"Path or http(s) URL of the clusterctl configuration file. If unspecified, $XDG_CONFIG_HOME/cluster-api/clusterctl.yaml, then ~/.cluster-api/clusterctl.yaml")
	pf.Var(userinput.Value{}, "max-input-size",
		"The most capctl reads from one file or standard input (YAML, --values, backup files), e.g. 64Mi or 1Gi; larger inputs are refused")
	pf.IntVarP(&f.global.verbosity, "v", "v", 0, "Log verbosity (0 normal progress, 1 more detail, 5 every object and request)")
	pf.DurationVar(&f.global.connectTimeout, "connect-timeout", cluster.DefaultConnectTimeout,
		"How long to wait for the management cluster to answer before giving up")
	_ = root.RegisterFlagCompletionFunc("kubeconfig-context", completeContexts(f))

	builders := append([]func(*factory) *cobra.Command(nil), commandBuilders...)
	cmds := make([]*cobra.Command, 0, len(builders))
	for _, b := range builders {
		cmds = append(cmds, b(f))
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name() < cmds[j].Name() })
	// Only groups that hold a command get a heading; "other" always does (help, completion).
	used := map[string]bool{groupOther: true}
	for _, c := range cmds {
		used[c.GroupID] = true
	}
	for _, g := range []*cobra.Group{
		{ID: groupManagement, Title: "Cluster Management Commands:"},
		{ID: groupTroubleshooting, Title: "Troubleshooting and Debugging Commands:"},
		{ID: groupOther, Title: "Other Commands:"},
	} {
		if used[g.ID] {
			root.AddGroup(g)
		}
	}
	root.AddCommand(cmds...)
	// Wrong flags are usage errors: show the usage with them.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	return root
}

// run executes capctl with args and returns the process exit code.
func run(args []string, io *iostreams.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runWithPlugins(ctx, args, io, true)
}

// runContext runs capctl in-process (tests): a plugin runs as a child process.
func runContext(ctx context.Context, args []string, io *iostreams.IOStreams) int {
	return runWithPlugins(ctx, args, io, false)
}

// runWithPlugins runs the command args name; when its first word is no built-in command but a
// plugin on PATH, the plugin runs instead: replacing this process when replace is set (the real
// binary on Unix, as kubectl does), else as a child whose exit code is returned.
func runWithPlugins(ctx context.Context, args []string, io *iostreams.IOStreams, replace bool) int {
	f := newFactory(io)
	root := newRootCmd(f)
	if p, rest, ok := findPlugin(root, args); ok {
		var err error
		code := 1
		if replace {
			err = plugin.Exec(p, rest)
		} else {
			code, err = plugin.Run(p, rest, io.In, io.Out, io.ErrOut)
		}
		if err != nil {
			fmt.Fprintf(io.ErrOut, "Error: %v\n", err)
			return 1
		}
		return code
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var ec exitCodeError
	if errors.As(err, &ec) {
		return ec.code
	}
	fmt.Fprintf(io.ErrOut, "Error: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsageError(err) {
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(io.ErrOut, "\n%s", cmd.UsageString())
	}
	return 1
}

// isCobraUsageError recognises cobra's own argument errors, which it returns as plain errors.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "requires at most", "requires exactly", "invalid argument", "none of the others can be"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
