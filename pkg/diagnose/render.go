package diagnose

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/multicluster"
)

// RenderOptions tune the text output.
type RenderOptions struct {
	Now   time.Time
	Color bool
}

func paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func severityLabel(s Severity, color bool) string {
	switch s {
	case SeverityError:
		return paint(color, "31", "ERROR")
	case SeverityWarning:
		return paint(color, "33", "WARNING")
	}
	return paint(color, "36", "INFO")
}

// SinceText is "2026-01-01T11:30:00Z (30m ago)".
func SinceText(t *time.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	d := now.Sub(*t)
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), duration.HumanDuration(d))
}

// RenderText prints a report for people: a headline, then each finding with its explanation,
// evidence, responsible component and next commands, the root cause first.
func RenderText(w io.Writer, r *Report, o RenderOptions) error {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	var b strings.Builder
	name := r.Namespace + "/" + r.Cluster
	switch {
	case r.Healthy:
		fmt.Fprintf(&b, "Cluster %s: %s, no rule found a problem.\n", name, paint(o.Color, "32", "healthy"))
	case r.Problems() == 0:
		fmt.Fprintf(&b, "Cluster %s: %s: no rule found a problem in what could be read, %d check(s) not made.\n", name, paint(o.Color, "33", "not fully checked"), len(r.NotChecked))
	default:
		fmt.Fprintf(&b, "Cluster %s: %s, %d problem(s).\n", name, paint(o.Color, "31", "not healthy"), r.Problems())
	}
	if w := r.Workload; w != nil {
		if w.Reachable {
			cni := "no CNI running"
			if w.CNI {
				cni = "CNI running"
			}
			fmt.Fprintf(&b, "Workload cluster: read (%d Node(s), %s).\n", w.Nodes, cni)
		} else {
			fmt.Fprintf(&b, "Workload cluster: not read: %s\n", w.Error)
		}
	}
	writePartial(&b, r.Unread, r.NotChecked)
	for i, f := range r.Findings {
		b.WriteString("\n")
		head := fmt.Sprintf("%d. %s %s  %s", i+1, severityLabel(f.Severity, o.Color), f.Rule, f.Object)
		if f.Root {
			head += "  " + paint(o.Color, "1", "<- root cause: fix this first")
		}
		b.WriteString(head + "\n")
		fmt.Fprintf(&b, "   What:  %s\n", f.Summary)
		if s := SinceText(f.Since, now); s != "" {
			fmt.Fprintf(&b, "   Since: %s\n", s)
		}
		fmt.Fprintf(&b, "   Why:   %s\n", f.Explanation)
		if len(f.Evidence) > 0 {
			b.WriteString("   Evidence:\n")
			for _, e := range f.Evidence {
				fmt.Fprintf(&b, "     - %s\n", indentLines(e, "       "))
			}
		}
		if f.Responsible != nil {
			fmt.Fprintf(&b, "   Responsible: %s\n", f.Responsible)
		}
		if len(f.Next) > 0 {
			b.WriteString("   Next:\n")
			for _, c := range f.Next {
				fmt.Fprintf(&b, "     %s\n", c)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writePartial says what a partial view could not read and which checks it could not make.
func writePartial(b *strings.Builder, unread []authz.Unreadable, nc []NotChecked) {
	if len(unread) > 0 {
		b.WriteString(authz.PartialViewNote(unread))
	}
	for _, n := range nc {
		fmt.Fprintf(b, "Not checked: %s for %s: %s\n", n.Rule, n.Object, n.Reason)
	}
}

func indentLines(s, indent string) string {
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

// RenderFleet prints one line per cluster, problems first.
func RenderFleet(w io.Writer, fr *FleetReport, o RenderOptions) error {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	rows := make([][]string, 0, len(fr.Clusters))
	multi := false
	for _, r := range fr.Clusters {
		multi = multi || r.ManagementCluster != ""
	}
	for _, r := range fr.Clusters {
		status := paint(o.Color, "32", "healthy")
		rule, object, since, summary := "", "", "", ""
		switch {
		case r.Error != "":
			status, summary = paint(o.Color, "31", "error"), r.Error
		case r.Problems == 0 && len(r.NotChecked) > 0:
			status = paint(o.Color, "33", "not checked")
			rule, object, summary = r.NotChecked[0].Rule, r.NotChecked[0].Object, "not checked: "+r.NotChecked[0].Reason
		case !r.Healthy:
			status = paint(o.Color, "31", "problems")
			if f := r.Root; f != nil {
				rule, object, summary = f.Rule, f.Object, f.Summary
				if f.Since != nil {
					since = duration.HumanDuration(now.Sub(*f.Since))
				}
			}
		}
		rows = append(rows, multicluster.Lead(multi, r.ManagementCluster, r.Namespace, r.Name, status, fmt.Sprint(r.Problems), rule, object, since, summary))
	}
	if fr.ManagementError != "" {
		if _, err := fmt.Fprintf(w, "Management side not checked: %s\n", fr.ManagementError); err != nil {
			return err
		}
	}
	if len(fr.Unread) > 0 {
		var b strings.Builder
		writePartial(&b, fr.Unread, nil)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return output.WriteTable(w, multicluster.Lead(multi, multicluster.Column, "NAMESPACE", "NAME", "STATUS", "PROBLEMS", "ROOT CAUSE", "OBJECT", "SINCE", "SUMMARY"), rows)
}

// RenderProviders prints the inventory with the state of each provider.
func RenderProviders(w io.Writer, m *Management) error {
	rows := make([][]string, 0, len(m.Providers))
	for _, p := range m.Providers {
		rows = append(rows, providerRow(p, m.CoreContract))
	}
	if err := output.WriteTable(w, providerHeader, rows); err != nil {
		return err
	}
	if cm := m.CertManager; cm != nil {
		if _, err := fmt.Fprintf(w, "\ncert-manager%s\n", certManagerState(cm)); err != nil {
			return err
		}
	}
	if len(m.Unread) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\n")
	writePartial(&b, m.Unread, nil)
	_, err := io.WriteString(w, b.String())
	return err
}

var providerHeader = []string{"NAMESPACE", "NAME", "TYPE", "VERSION", "CONTRACT", "CONTROLLER", "WEBHOOK", "CONCURRENCY"}

// certManagerState is " v1.19.1: ready", ": not installed", ...
func certManagerState(cm *CertManagerStatus) string {
	state := "not installed"
	switch {
	case len(cm.NotChecked) > 0:
		state = "not checked: " + strings.Join(cm.NotChecked, "; ")
	case cm.Installed && cm.Ready:
		state = "ready"
	case cm.Installed:
		state = "NOT ready"
	}
	v := ""
	if cm.Version != "" {
		v = " " + cm.Version
	}
	return v + ": " + state
}

// providerRow is one provider's cells of the providers table.
func providerRow(p ProviderStatus, coreContract string) []string {
	contract := p.Contract
	if contract == "" {
		contract = "-"
	} else if !p.ContractCompatible {
		contract += " (incompatible with " + coreContract + ")"
	}
	if p.NotChecked[checkContract] != "" {
		contract = "not checked"
	}
	controller := "available"
	if !p.ControllerAvailable {
		controller = "NOT available"
		if len(p.Deployments) == 0 {
			controller = "no Deployment"
		}
	}
	if p.NotChecked[checkController] != "" {
		controller = "not checked"
	}
	webhook := "-"
	if p.WebhookAnswers != nil {
		webhook = "answers"
		if !*p.WebhookAnswers {
			webhook = "NOT answering"
		}
	}
	if p.NotChecked[checkWebhook] != "" {
		webhook = "not checked"
	}
	var conc []string
	for _, d := range p.Deployments {
		for k, v := range d.Concurrency {
			conc = append(conc, strings.TrimPrefix(k, "--")+"="+v)
		}
	}
	sort.Strings(conc)
	cs := strings.Join(conc, ",")
	if cs == "" {
		cs = "-"
	}
	return []string{p.Namespace, p.Name, string(p.Type), p.Version, contract, controller, webhook, cs}
}
