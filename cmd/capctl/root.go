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

// topLevelCommands is the command tree's one list: every top-level command, in help order
// (each group's commands by name). A new command is added here.
func topLevelCommands(f *factory) []*cobra.Command {
	return []*cobra.Command{
		newAlphaCmd(f),
		newCmdAuth(f),
		newCmdCompletion(f),
		newCmdConfig(f),
		newCmdConvert(f, nil),
		newCmdDelete(f, nil),
		newCmdDescribe(f, nil, nil),
		newDiagnoseCmd(f),
		newCmdGenerate(f),
		newCmdGet(f),
		newCmdInit(f, nil),
		newCmdMCP(f, nil),
		newCmdMove(f, nil),
		newCmdPlugin(f),
		newCmdRepository(f),
		newCmdTopology(f),
		newCmdUpgrade(f),
		newCmdVersion(f, nil),
	}
}

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

	cmds := topLevelCommands(f)
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
	applyInvocationRules(root)
	return root
}

// applyInvocationRules gives every command of the tree capctl's invocation rules, so that no
// command file writes its own:
//   - a parent (a command with subcommands and no run of its own, the root too; init, which runs
//     and has list-images, is none) run without a subcommand prints its
//     help on stdout and exits 0, as clusterctl's parents do; a word after it that names no
//     subcommand is a usage error ("unknown command"), with cobra's suggestions;
//   - every error of cobra's own checks of an invocation (argument counts and values, required
//     flags, flags marked mutually exclusive) is returned as a usageError, so it is printed with
//     the usage by its type, never by matching its text.
func applyInvocationRules(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		c.Args = unknownSubcommand
		c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[parentAnnotation] = "true"
	}
	if c.Runnable() {
		c.Args = typedArgs(c.Args)
	}
	for _, sub := range c.Commands() {
		applyInvocationRules(sub)
	}
}

// parentAnnotation marks the commands applyInvocationRules made parents (tests list them).
const parentAnnotation = "capctl.parent"

// unknownSubcommand is the argument rule of a parent: no argument, or a usage error naming the
// word and the subcommands it may have meant.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	}
	return usageError{errors.New(msg)}
}

// typedArgs runs a command's argument rule (cobra's default when none is set) and then cobra's
// flag checks, which cobra runs next anyway, and returns their errors as usage errors.
func typedArgs(rule cobra.PositionalArgs) cobra.PositionalArgs {
	if rule == nil {
		rule = cobra.ArbitraryArgs
	}
	return func(cmd *cobra.Command, args []string) error {
		for _, check := range []func() error{
			func() error { return rule(cmd, args) },
			cmd.ValidateRequiredFlags,
			cmd.ValidateFlagGroups,
		} {
			if err := check(); err != nil {
				var ue usageError
				if errors.As(err, &ue) {
					return err
				}
				return usageError{err}
			}
		}
		return nil
	}
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
	if errors.As(err, &ue) {
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(io.ErrOut, "\n%s", cmd.UsageString())
	}
	return 1
}
