package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/deletion"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/provider"
)

// DeleteOptions is `capctl delete` parsed from its flags: Request is the one deletion request.
type DeleteOptions struct {
	deps
	Request deletion.Request
	Yes     bool
	DryRun  bool
	Output  output.Format

	refs map[provider.Type]*[]string
}

const deleteLong = `
Delete provider components from the management cluster, with their inventory entries.

To protect what users created, the providers' namespaces and CRDs (and so every object of those
CRDs) are kept unless --include-namespace / --include-crd say otherwise; --include-crd is refused
while objects of the CRDs exist. cert-manager is kept unless --include-cert-manager is given, capctl
or clusterctl installed it, and nothing else needs it.

capctl prints what will be deleted and asks for confirmation; pass --yes where nobody can answer.`

const deleteExample = `
  # Delete the docker infrastructure provider, keeping its namespace and CRDs
  capctl delete --infrastructure docker

  # Delete every provider, their namespaces and CRDs, and cert-manager, without asking
  capctl delete --all --include-namespace --include-crd --include-cert-manager --yes`

// newCmdDelete builds `capctl delete`; runF, when set, replaces running it (tests).
func newCmdDelete(f *factory, runF func(*DeleteOptions) error) *cobra.Command {
	o := &DeleteOptions{deps: f.deps(), refs: map[provider.Type]*[]string{}}
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "delete [providers] [--all]",
		Short:   "Delete providers from the management cluster",
		Long:    strings.TrimSpace(deleteLong),
		Example: strings.TrimSpace(deleteExample),
		Args:    cobra.NoArgs,
		RunE:    leafRun(o, o.complete, runF, runDelete),
	}
	fl := cmd.Flags()
	for _, t := range provider.Types {
		o.refs[t] = new([]string)
		name := strings.TrimPrefix(t.Flag(), "--")
		usage := fmt.Sprintf("%s to delete ([namespace/]name[:version], comma-separated or repeated)", t)
		fl.StringSliceVarP(o.refs[t], name, t.FlagShorthand(), nil, usage)
	}
	fl.BoolVar(&o.Request.All, "all", false, "Delete every provider in the inventory")
	fl.BoolVar(&o.Request.IncludeNamespace, "include-namespace", false, "Also delete the providers' namespaces, with EVERYTHING in them")
	fl.BoolVar(&o.Request.IncludeCRD, "include-crd", false, "Also delete the providers' CRDs (refused while objects of those CRDs exist)")
	fl.BoolVar(&o.Request.IncludeCertManager, "include-cert-manager", false, "Also delete cert-manager, if capctl or clusterctl installed it and no remaining provider or object uses it")
	fl.BoolVarP(&o.Yes, "yes", "y", false, "Delete without asking for confirmation")
	fl.BoolVar(&o.DryRun, "dry-run", false, "Print what would be deleted and stop")
	addFormatFlag(cmd, &o.Output, "json and yaml print the plan and, unless --dry-run, the result")
	return cmd
}

// complete turns the provider flags into the deletion request and validates it, before any
// cluster call.
func (o *DeleteOptions) complete([]string) error {
	o.Request.Providers = nil
	for _, t := range provider.Types {
		for _, s := range *o.refs[t] {
			ref, err := provider.ParseReference(s, true)
			if err != nil {
				return usageErrorf("%s: %v", t.Flag(), err)
			}
			o.Request.Providers = append(o.Request.Providers, deletion.Selection{Type: t, Name: ref.Name, Namespace: ref.Namespace, Version: ref.Version})
		}
	}
	if err := o.Request.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// runDelete plans the deletion, shows the plan, asks (unless --yes), deletes and reports.
func runDelete(ctx context.Context, o *DeleteOptions) error {
	e, err := o.env(ctx, multicluster.Selection{})
	if err != nil {
		return err
	}
	plan, err := deletion.BuildPlan(ctx, e, o.Request)
	if err != nil {
		return err
	}
	structured := o.Output.Structured()
	switch {
	case !structured:
		err = deletion.RenderPlan(o.IO.Out, plan)
	case !o.Yes && !o.DryRun:
		// The plan goes to stderr as a table for whoever confirms; stdout gets one document.
		err = deletion.RenderPlan(o.IO.ErrOut, plan)
	}
	if err != nil {
		return err
	}
	if o.DryRun {
		fmt.Fprintln(o.IO.ErrOut, "Dry run: nothing was deleted.")
		if structured {
			if err := output.WriteStructured(o.IO.Out, o.Output, &deletion.Report{Plan: plan}); err != nil {
				return err
			}
		}
		// A dry run of an incomplete plan says the real run would refuse.
		return plan.Complete()
	}
	// Refused before anyone is asked to confirm a plan that is not the whole truth.
	if err := plan.Complete(); err != nil {
		return err
	}
	if err := o.confirm(plan); err != nil {
		return err
	}
	log, progress := o.Logger(), output.NewProgress(o.IO)
	res, err := deletion.Apply(ctx, e, deletion.ApplyRequest{Plan: plan, Progress: func(done, total int, obj deletion.Object, err error) {
		if err != nil {
			log.Info("Failed to delete", "object", obj.String(), "error", err.Error())
		} else {
			log.V(1).Info("Deleted", "object", obj.String())
		}
		progress.Count("Deleting objects", done, total)
	}})
	rep := &deletion.Report{Plan: plan, Result: res}
	if perr := output.Render(o.IO.Out, o.Output, rep, func(w io.Writer) error { return rep.WriteText(w, err) }); perr != nil && err == nil {
		err = perr
	}
	if !structured {
		if perr := res.WriteCounts(o.IO.ErrOut); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

// maxAnswer is the most read of an answer to a yes/no question.
const maxAnswer = 256

// confirm asks before deleting, unless --yes; without a terminal it refuses.
func (o *DeleteOptions) confirm(plan *deletion.Plan) error {
	if o.Yes {
		return nil
	}
	if !o.IO.IsStdinTTY() {
		return fmt.Errorf("refusing to delete without confirmation: standard input is not a terminal; pass --yes to delete the objects listed above")
	}
	ok, err := confirm(o.IO.In, o.IO.ErrOut, fmt.Sprintf("Delete %d object(s) and %d inventory entr%s? [y/N]: ", plan.Total(), len(plan.Providers), plural(len(plan.Providers), "y", "ies")))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("aborted: nothing was deleted")
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// confirm asks a yes/no question on a terminal. The answer is read from at most one short line's
// bytes, so an endless standard input without a newline is a "no", not a read without end.
func confirm(in io.Reader, out io.Writer, question string) (bool, error) {
	fmt.Fprint(out, question)
	line, err := bufio.NewReader(io.LimitReader(in, maxAnswer)).ReadString('\n')
	if err != nil && line == "" {
		if err == io.EOF {
			return false, nil
		}
		return false, fmt.Errorf("reading the answer: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
