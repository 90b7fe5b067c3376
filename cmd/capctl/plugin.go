package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/plugin"
)

func newCmdPlugin(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "plugin",
		Short:   "Work with plugins: capctl-NAME and clusterctl-NAME executables on PATH",
		Long: strings.TrimSpace(`
Work with plugins.

A plugin is an executable on PATH named capctl-NAME or clusterctl-NAME. When NAME is not a
built-in command, "capctl NAME args..." runs it with the arguments that follow, capctl's
environment and standard streams, and exits with its exit code, as kubectl and clusterctl run
theirs; so clusterctl plugins such as the Cluster API Operator's clusterctl-operator work
unchanged ("capctl operator ..."). capctl-NAME is looked up before clusterctl-NAME, each along
PATH in order. The words before the first flag name the plugin, longest first: "capctl foo bar"
runs capctl-foo-bar if there is one, else capctl-foo with the argument bar. An underscore in the
file name stands for a dash in the command: capctl-foo_bar runs as "capctl foo-bar". A plugin
cannot replace a built-in command.`),
	}
	cmd.AddCommand(newCmdPluginList(f, nil))
	return cmd
}

// PluginListOptions is `capctl plugin list` parsed from its flags.
type PluginListOptions struct {
	deps
	Output output.Format
	// Builtin tells whether a first word is a built-in command (the root's commands).
	Builtin func(string) bool

	root func() *cobra.Command
}

// newCmdPluginList builds `capctl plugin list`; runF, when set, replaces running it (tests).
func newCmdPluginList(f *factory, runF func(*PluginListOptions) error) *cobra.Command {
	o := &PluginListOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the plugins found on PATH, with warnings about those that cannot run",
		Long: strings.TrimSpace(`
List every capctl-* and clusterctl-* file on PATH: the command that runs it and its path, in
command order. A file is flagged when it would not run: not executable, named after a built-in
command (a built-in always wins), or shadowed by another file that the same command runs
instead (one earlier on PATH, or a capctl- file, which is looked up before clusterctl-).
The exit code is 0 also when there are warnings.`),
		Example: `  capctl plugin list
  capctl plugin list -o json`,
		Args: cobra.NoArgs,
	}
	cmd.RunE = leafRun(o, o.complete, runF, runPluginList)
	o.root = cmd.Root
	addFormatFlag(cmd, &o.Output, "")
	return cmd
}

// complete learns the built-in commands, which plugins never replace.
func (o *PluginListOptions) complete([]string) error {
	o.Builtin = builtinCommand(o.root())
	return nil
}

// runPluginList makes the one plugin.List call and prints the plugins.
func runPluginList(_ context.Context, o *PluginListOptions) error {
	entries := plugin.List(plugin.SearchPath(), o.Builtin)
	return plugin.RenderList(o.IO.Out, o.Output, entries)
}

// builtinCommand reports whether a word is one of root's commands (names and aliases, help and
// cobra's hidden completion commands included), which plugins never replace.
func builtinCommand(root *cobra.Command) func(string) bool {
	root.InitDefaultHelpCmd()
	names := map[string]bool{cobra.ShellCompRequestCmd: true, cobra.ShellCompNoDescRequestCmd: true}
	for _, c := range root.Commands() {
		names[c.Name()] = true
		for _, a := range c.Aliases {
			names[a] = true
		}
	}
	return func(s string) bool { return names[s] }
}

// findPlugin returns the plugin args names when its first word is not a built-in command.
func findPlugin(root *cobra.Command, args []string) (plugin.Plugin, []string, bool) {
	return plugin.Find(args, plugin.SearchPath(), builtinCommand(root))
}
