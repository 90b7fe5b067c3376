package main

import (
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/spf13/cobra"
)

func newCmdCompletion(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "completion bash|zsh|fish|powershell",
		Short:   "Output a shell completion script for bash, zsh, fish or powershell",
		Long: `Output a shell completion script. For example:

  source <(capctl completion bash)            # bash, current shell
  capctl completion zsh > "${fpath[1]}/_capctl" # zsh
  capctl completion fish | source               # fish
  capctl completion powershell | Out-String | Invoke-Expression`,
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			out := f.IO.Out
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			default:
				return root.GenPowerShellCompletionWithDesc(out)
			}
		},
	}
	return cmd
}

// completeContexts offers the contexts of the kubeconfig for --kubeconfig-context.
func completeContexts(f *factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		kc, err := cluster.LoadKubeconfig(f.global.kubeconfig) // bounded like every kubeconfig read
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return kc.ContextNames(), cobra.ShellCompDirectiveNoFileComp
	}
}
