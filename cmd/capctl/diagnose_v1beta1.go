package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/cutover"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
)

// DiagnoseV1Beta1Options are the flags of `diagnose v1beta1`: Request is the one request.
type DiagnoseV1Beta1Options struct {
	deps
	cutover.Request
	Output output.Format
}

func newCmdDiagnoseV1Beta1(f *factory, runF func(*DiagnoseV1Beta1Options) error) *cobra.Command {
	o := &DiagnoseV1Beta1Options{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "v1beta1",
		Short: "List what still depends on Cluster API's v1beta1 API, which a later release stops serving, and how to fix each",
		Long: strings.TrimSpace(`
Check a management cluster, and local manifests, for what breaks when Cluster API stops serving
its v1beta1 API:

  storage          CRDs whose status.storedVersions still holds v1beta1, with their object counts
                   (objects stored at v1beta1 must be rewritten first)
  provider         providers whose CRDs declare no contract newer than v1beta1
  patch-selector   ClusterClass patches selecting a template at a v1beta1 apiVersion (the topology
                   controller compares the whole apiVersion: they would silently stop applying)
  patch-path       the JSON patch paths of such patches that the v1beta2 kind does not have (checked
                   against the upstream v1beta2 types; another provider's kinds are named as not checked)
  manifest         with -f, objects written at v1beta1 in files (the API server would refuse them),
                   and the ClusterClasses in them, as above

Each finding names the object and the command or edit that fixes it. It only reads. External
(runtime extension) patches, and any kind that cannot be read, are listed as not checked.

Exit codes: 0 nothing depends on v1beta1, 2 findings, 3 partial (something could not be
checked), 1 the check itself failed.`),
		Example: strings.TrimSpace(`
  capctl diagnose v1beta1
  capctl diagnose v1beta1 -f clusterclasses/ -f clusters/
  capctl diagnose v1beta1 --offline -f fleet-repo/ -o json`),
		Args: cobra.NoArgs,
	}
	cmd.RunE = leafRun(o, o.complete, runF, runDiagnoseV1Beta1)
	fl := cmd.Flags()
	fl.StringSliceVarP(&o.Files, "filename", "f", nil, "Local manifests to check: files, directories (walked for *.yaml/*.yml) or - for standard input; repeatable")
	fl.BoolVar(&o.Offline, "offline", false, "Check only the files of -f, without a management cluster")
	addFormatFlag(cmd, &o.Output, "json and yaml print every finding: check, object, message, fix; and what was not checked")
	return cmd
}

// complete checks the request before anything is read.
func (o *DiagnoseV1Beta1Options) complete([]string) error {
	o.Stdin = o.IO.In
	if err := o.Request.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// runDiagnoseV1Beta1 makes the one cutover.Run call and prints its report.
func runDiagnoseV1Beta1(ctx context.Context, o *DiagnoseV1Beta1Options) error {
	var e env.Env
	if o.Offline {
		o.wire(&e)
	} else {
		var err error
		if e, err = o.env(ctx, multicluster.Selection{}); err != nil {
			return err
		}
	}
	rep, err := cutover.Run(ctx, e, o.Request)
	if err != nil {
		return err
	}
	if err := output.Render(o.IO.Out, o.Output, rep, rep.RenderText); err != nil {
		return err
	}
	return exitCode(rep.ExitCode())
}
