package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/rollout"
)

func newAlphaCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupOther,
		Use:     "alpha",
		Short:   "Commands for features in alpha",
	}
	rc := &cobra.Command{
		Use:   "rollout",
		Short: "Manage the rollout of a cluster-api resource",
		Long: strings.TrimSpace(`
Manage the rollout of MachineDeployments and control planes (KubeadmControlPlane, or another
control plane that has the contract's spec.rollout.after field).

Resources are given as KIND/NAME (machinedeployment/md-0, kubeadmcontrolplane/cp); MachineDeployments
can also be picked with --selector or --all, limited to one cluster with --cluster. Every resource is
checked before the first change: one refused resource refuses the command.`),
	}
	for _, a := range []rollout.Action{rollout.Restart, rollout.Pause, rollout.Resume} {
		rc.AddCommand(newCmdRollout(f, a, nil))
	}
	cmd.AddCommand(rc)
	return cmd
}

// RolloutOptions are the flags and arguments of `capctl alpha rollout restart|pause|resume`:
// Request is the one rollout request.
type RolloutOptions struct {
	IO *iostreams.IOStreams
	rollout.Request
	Output output.Format

	// deps is not embedded: its Cluster would hide the request's.
	deps deps
}

var rolloutHelp = map[rollout.Action]struct{ short, long, example string }{
	rollout.Restart: {
		"Restart a cluster-api resource",
		"Restart a MachineDeployment or control plane: spec.rollout.after is set to now, so every Machine it has now is replaced. Paused resources, and resources whose rollout.after is in the future, are refused. The Machines that will be replaced are listed.\n\nWhen a Cluster's topology (ClusterClass) manages the object, the topology controller owns it, so the restart is set in the Cluster instead (spec.topology.controlPlane.rollout.after, or spec.topology.workers.machineDeployments[].rollout.after of the object's MachineDeployment topology), which that controller copies onto the object; all of one Cluster's objects are set in one patch of the Cluster, applied only if the Cluster has not changed since it was read.",
		"  # Restart a MachineDeployment\n  capctl alpha rollout restart machinedeployment/my-md-0\n\n  # Restart a KubeadmControlPlane\n  capctl alpha rollout restart kubeadmcontrolplane/my-kcp\n\n  # See which Machines every MachineDeployment of a cluster would replace\n  capctl alpha rollout restart --all --cluster prod-1 -n team-a --dry-run",
	},
	rollout.Pause: {
		"Pause a cluster-api resource",
		"Pause a MachineDeployment (spec.paused) or a control plane (annotation cluster.x-k8s.io/paused): its controller stops rolling it out. A resource already paused is refused.",
		"  # Pause a MachineDeployment\n  capctl alpha rollout pause machinedeployment/my-md-0\n\n  # Pause every MachineDeployment labelled tier=batch\n  capctl alpha rollout pause --selector tier=batch",
	},
	rollout.Resume: {
		"Resume a cluster-api resource",
		"Resume a paused MachineDeployment or control plane. A resource that is not paused is refused.",
		"  # Resume a MachineDeployment\n  capctl alpha rollout resume machinedeployment/my-md-0\n\n  # Resume a KubeadmControlPlane\n  capctl alpha rollout resume kubeadmcontrolplane/my-kcp",
	},
}

func newCmdRollout(f *factory, action rollout.Action, runF func(*RolloutOptions) error) *cobra.Command {
	o := &RolloutOptions{IO: f.IO, deps: f.deps(), Request: rollout.Request{Action: action}}
	h := rolloutHelp[action]
	cmd := &cobra.Command{
		Use:     string(action) + " RESOURCE...",
		Short:   h.short,
		Long:    h.long,
		Example: h.example,
		RunE:    leafRun(o, o.complete, runF, runRollout),
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "Namespace where the resource(s) reside. If unspecified, the kubeconfig context's namespace")
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "Pick the MachineDeployments matching this label selector (instead of naming resources)")
	cmd.Flags().BoolVar(&o.All, "all", false, "Pick every MachineDeployment of the namespace (or of --cluster)")
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "With --all or --selector: only the MachineDeployments of this cluster")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Check and show what would change, changing nothing")
	addFormatFlag(cmd, &o.Output, "json and yaml print the targets and the Machines a restart replaces")
	return cmd
}

// complete takes the resources from the arguments and checks the request, before the
// management cluster is contacted.
func (o *RolloutOptions) complete(args []string) error {
	o.Resources = args
	if err := o.Request.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// runRollout makes the one rollout.Run call and renders its result.
func runRollout(ctx context.Context, o *RolloutOptions) error {
	c, err := o.deps.Cluster(ctx)
	if err != nil {
		return err
	}
	res, err := rollout.Run(ctx, env.One(c), o.Request)
	if err != nil {
		return err
	}
	return output.Render(o.IO.Out, o.Output, res, res.WriteText)
}
