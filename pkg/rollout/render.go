package rollout

import (
	"fmt"
	"io"

	"github.com/capctl/capctl/internal/output"
)

// verbs say what each action did, in the text view.
var verbs = map[Action]string{Restart: "restarted", Pause: "paused", Resume: "resumed"}

// WriteText prints, per resource, what was done and, for a restart, a describe-style tree
// of the Machines that will be replaced.
func (res *Result) WriteText(w io.Writer) error {
	for _, t := range res.Items {
		verb := verbs[res.Action]
		if res.DryRun {
			verb = "would be " + verb + " (dry run)"
		}
		line := fmt.Sprintf("%s %s", t.Ref, verb)
		if res.Action == Restart {
			line += fmt.Sprintf(", rollout after %s", res.Time)
		}
		if t.Via != "" {
			line += " (set in " + t.Via + ", which its topology controller copies)"
		}
		fmt.Fprintln(w, line)
		if res.Action != Restart {
			continue
		}
		what := fmt.Sprintf("%s %s/%s", t.Kind, t.Namespace, t.Name)
		if t.Cluster != "" {
			what += " (cluster " + t.Cluster + ")"
		}
		switch len(t.Machines) {
		case 0:
			fmt.Fprintf(w, "└─%s: no Machines yet, nothing to replace\n", what)
			continue
		case 1:
			fmt.Fprintf(w, "└─%s: 1 Machine will be replaced\n", what)
		default:
			fmt.Fprintf(w, "└─%s: %d Machines will be replaced\n", what, len(t.Machines))
		}
		table := output.NewTable(w, "  MACHINE", "PHASE", "VERSION", "NODE")
		for i, m := range t.Machines {
			branch := "  ├─"
			if i == len(t.Machines)-1 {
				branch = "  └─"
			}
			table.Row(branch+m.Name, m.Phase, m.Version, m.Node)
		}
		if err := table.Flush(); err != nil {
			return err
		}
	}
	return nil
}
