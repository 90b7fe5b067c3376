package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/multicluster"
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
	// Fleet is the machine rotation of --all-clusters (restart only): the one fleet request,
	// rolled by the engine of the fleet upgrade; nil without the flag.
	Fleet *fleetupgrade.FleetApplyRequest
	// Contexts are the management clusters of --contexts/--all-contexts (with --all-clusters).
	Contexts multicluster.Selection

	allClusters  bool
	rolloutAfter string
	rolloutFlags rolloutFlags
	noWait       bool
	timeout      time.Duration
	flags        *pflag.FlagSet

	// deps is not embedded: its Cluster would hide the request's.
	deps deps
}

var rolloutHelp = map[rollout.Action]struct{ short, long, example string }{
	rollout.Restart: {
		"Restart a cluster-api resource",
		"Restart a MachineDeployment or control plane: spec.rollout.after is set to now, so every Machine it has now is replaced. Paused resources, and resources whose rollout.after is in the future, are refused. The Machines that will be replaced are listed.\n\nWhen a Cluster's topology (ClusterClass) manages the object, the topology controller owns it, so the restart is set in the Cluster instead (spec.topology.controlPlane.rollout.after, or spec.topology.workers.machineDeployments[].rollout.after of the object's MachineDeployment topology), which that controller copies onto the object; all of one Cluster's objects are set in one patch of the Cluster, applied only if the Cluster has not changed since it was read.\n\nWith --all-clusters, rotate the machines of the fleet: every workload cluster that -n and -l pick (Clusters, every namespace by default; --contexts/--all-contexts for several management clusters) gets rollout.after on its control plane and all of its MachineDeployments, as above, wave by wave in the order and with the flags of upgrade apply --kubernetes-version (wave labels, --canary, --max-parallel, --max-failures, --soak, --gate-command, --window). A cluster is done when every control plane and MachineDeployment Machine was created at or after the rotation's time, all are up to date and the Cluster is Available. Every cluster's patch is first sent as a server-side dry run; the run is recorded (capctl upgrade history). An interrupted rotation resumes with its --rollout-after: what asks it already is not patched again, and replaced Machines are not replaced twice.",
		"  # Restart a MachineDeployment\n  capctl alpha rollout restart machinedeployment/my-md-0\n\n  # Restart a KubeadmControlPlane\n  capctl alpha rollout restart kubeadmcontrolplane/my-kcp\n\n  # See which Machines every MachineDeployment of a cluster would replace\n  capctl alpha rollout restart --all --cluster prod-1 -n team-a --dry-run\n\n  # Rotate the machines of every cluster labelled env=prod, a canary first, then half a wave at once\n  capctl alpha rollout restart --all-clusters -l env=prod --canary 1 --max-parallel 50% --soak 10m\n\n  # Resume that rotation after Ctrl-C\n  capctl alpha rollout restart --all-clusters -l env=prod --canary 1 --max-parallel 50% --soak 10m --rollout-after 2026-12-07T09:00:00Z",
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
	o.flags = cmd.Flags()
	if action == rollout.Restart {
		addRotationFlags(cmd, o)
	}
	return cmd
}

// rotationFlagNames are the flags of restart that only a fleet rotation (--all-clusters) takes.
var rotationFlagNames = append([]string{"rollout-after", "timeout", "no-wait", "contexts", "all-contexts"}, rolloutFlagNames...)

// addRotationFlags adds the fleet rotation to restart: --all-clusters, the rollout flag group of
// the fleet upgrade, --rollout-after (the resume), --timeout, --no-wait and --contexts.
func addRotationFlags(cmd *cobra.Command, o *RolloutOptions) {
	fl := cmd.Flags()
	fl.BoolVar(&o.allClusters, "all-clusters", false, "Rotate the machines of every workload cluster (control plane and MachineDeployments), wave by wave like upgrade apply --kubernetes-version; -n and -l then pick Clusters (default: every namespace)")
	fl.StringVar(&o.rolloutAfter, "rollout-after", "", "With --all-clusters: the rollout.after to set (RFC 3339, not in the future; default now); give an interrupted rotation's to resume it without replacing Machines twice")
	o.rolloutFlags.add(cmd, "--all-clusters")
	fl.BoolVar(&o.noWait, "no-wait", false, "With --window: outside the window, exit at once saying when it opens next, instead of waiting for it")
	positiveDurationVar(fl, &o.timeout, "timeout", fleetupgrade.DefaultClusterTimeout, "With --all-clusters: how long one cluster may take to replace its machines")
	addContextsFlags(cmd, &o.Contexts)
	for _, name := range rotationFlagNames {
		requireFlags(cmd, "shapes the fleet rotation", []string{name}, "all-clusters")
	}
	for _, name := range []string{"all", "cluster"} {
		cmd.MarkFlagsMutuallyExclusive("all-clusters", name)
	}
}

// complete takes the resources from the arguments and checks the request, before the
// management cluster is contacted.
func (o *RolloutOptions) complete(args []string) error {
	if o.allClusters {
		return o.completeRotation(args)
	}
	o.Resources = args
	if err := o.Request.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// completeRotation builds the fleet rotation request of --all-clusters and checks it.
func (o *RolloutOptions) completeRotation(args []string) error {
	if len(args) > 0 {
		return usageErrorf("--all-clusters rotates whole clusters: name no resources (%s)", strings.Join(args, " "))
	}
	if err := checkContextsFlags(o.flags, o.Contexts); err != nil {
		return err
	}
	rot := &fleetupgrade.Rotation{}
	if o.rolloutAfter != "" {
		at, err := time.Parse(time.RFC3339, o.rolloutAfter)
		if err != nil {
			return usageErrorf("--rollout-after %q: not an RFC 3339 time like 2026-12-07T12:00:00Z", o.rolloutAfter)
		}
		rot.After = at
	}
	r, err := o.rolloutFlags.toRollout()
	if err != nil {
		return err
	}
	req := &fleetupgrade.FleetApplyRequest{Rotation: rot, Selection: fleetupgrade.FleetSelection{Namespace: o.Namespace, Selector: o.Selector},
		Rollout: r, DryRun: o.DryRun, Timeout: o.timeout, NoWait: o.noWait}
	if err := req.Complete(); err != nil {
		return usageError{err}
	}
	o.Fleet = req
	return nil
}

// runRollout makes the one rollout.Run call and renders its result.
func runRollout(ctx context.Context, o *RolloutOptions) error {
	if o.Fleet != nil {
		return runRotation(ctx, o)
	}
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

// runRotation rolls the fleet rotation (the one fleetupgrade.Apply call, over the management
// cluster or those of --contexts/--all-contexts) and prints the report; when it stops it says
// how to resume (with the rotation's --rollout-after).
func runRotation(ctx context.Context, o *RolloutOptions) error {
	at := o.Fleet.Rotation.After.UTC().Format(time.RFC3339)
	first := fmt.Sprintf("Rotating machines: rollout.after %s (resume an interrupted run with --rollout-after %s)", at, at)
	return runFleet(ctx, o.deps, o.Contexts, o.Output, *o.Fleet, first)
}
