package clusterinit

import (
	"fmt"
	"io"
	"strings"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/certmanager"
)

// RenderResolved prints the providers Init resolved, before it installs them (InitRequest.OnPlan).
func RenderResolved(w io.Writer, plan []Planned) {
	fmt.Fprintln(w, "Resolved providers:")
	renderPlan(w, plan, false)
}

// renderPlan prints one row per provider; done shows what an install did.
func renderPlan(w io.Writer, plan []Planned, done bool) {
	t := output.NewTable(w, "NAME", "TYPE", "VERSION", "NAMESPACE", "CONTRACT", "ACTION")
	for _, p := range plan {
		action := string(p.Action)
		switch {
		case p.Action == ActionInstall && p.Default:
			action = "install (first-init default)"
		case p.Action == ActionAlreadyThere:
			action = "already installed, skipped"
		case p.Action == ActionWouldInstall:
			action = fmt.Sprintf("would apply %d objects", p.Objects)
			if p.Unchecked > 0 {
				action += fmt.Sprintf(" (%d not checkable yet)", p.Unchecked)
			}
		case done && p.Action == ActionInstalled:
			action = fmt.Sprintf("installed (%d objects)", p.Objects)
		}
		t.Row(p.Label(), string(p.Type), p.Version, p.Namespace, p.Contract, action)
	}
	_ = t.Flush()
}

// RenderResult prints the result of Init for people.
func RenderResult(w io.Writer, res *Result) error {
	if res.NoOp {
		names := make([]string, 0, len(res.Providers))
		for _, p := range res.Providers {
			names = append(names, fmt.Sprintf("%s %s in %s", p.Label(), p.Version, p.Namespace))
		}
		fmt.Fprintf(w, "Nothing to do: every requested provider is already installed at that version (%s).\n", strings.Join(names, ", "))
		return nil
	}
	renderPlan(w, res.Providers, true)
	if cm := res.CertManager; cm != nil {
		switch cm.Action {
		case certmanager.ActionInstalled:
			fmt.Fprintf(w, "cert-manager %s installed (%d objects).\n", cm.Version, cm.Applied)
		case certmanager.ActionAlreadyWorking:
			fmt.Fprintln(w, "cert-manager was already installed and working; left as it is.")
		case certmanager.ActionExternal:
			fmt.Fprintln(w, "cert-manager is externally provisioned and working.")
		case certmanager.ActionWouldInstall:
			fmt.Fprintf(w, "cert-manager %s would be installed (%d objects).\n", cm.Version, cm.Applied)
		case certmanager.ActionWouldSkip:
			fmt.Fprintln(w, "cert-manager appears to be installed; it would not be touched.")
		}
	}
	if res.DryRun {
		fmt.Fprintln(w, "\nDry run: nothing was changed. The API server checked every object it could; objects whose namespace or CRD does not exist yet could only be checked locally.")
		return nil
	}
	if res.FirstRun {
		fmt.Fprint(w, `
Your management cluster has been initialized successfully!

You can now create your first workload cluster by running the following:

  capctl generate cluster [name] --kubernetes-version [version] | kubectl apply -f -
`)
		return nil
	}
	fmt.Fprintln(w, "\nThe providers were added to the management cluster successfully.")
	return nil
}

// RenderImages prints the images of ListImages, one per line.
func RenderImages(w io.Writer, imgs *Images) error {
	for _, i := range imgs.Images {
		fmt.Fprintln(w, i)
	}
	return nil
}
