package describe

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/capctl/capctl/pkg/authz"
)

// RenderOptions control the text presentation.
type RenderOptions struct {
	// Color enables ANSI colours (the caller decides: terminal, NO_COLOR, --color).
	Color bool
	// Now is the clock SINCE is measured against; zero means time.Now().
	Now time.Time
	// MessageWidth is where messages wrap (default 100, as clusterctl).
	MessageWidth int
}

const (
	firstElem = "├─"
	lastElem  = "└─"
	pipe      = "│ "
	indent    = "  "
	filler    = "          " // ten spaces between an object and its condition rows
)

// palette paints text with ANSI codes when colour is on.
type palette struct{ on bool }

func (p palette) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) gray(s string) string  { return p.paint("90", s) }
func (p palette) red(s string) string   { return p.paint("31", s) }
func (p palette) cyan(s string) string  { return p.paint("36", s) }
func (p palette) bold(s string) string  { return p.paint("1", s) }
func (p palette) group(s string) string { return p.paint("37;1", s) }
func (p palette) status(c Condition) string {
	switch c.Status {
	case "True":
		if negativePolarity[c.Type] {
			return p.paint("31", c.Status)
		}
		return p.paint("32", c.Status)
	case "False":
		if negativePolarity[c.Type] {
			return p.paint("32", c.Status)
		}
		return p.paint("31", c.Status)
	case "Unknown":
		return p.paint("33", c.Status)
	}
	return p.gray(c.Status)
}

// v1beta1 colours: True green; otherwise by severity (Error red, Warning yellow, else white).
func (p palette) v1beta1(c *Condition, s string) string {
	if c == nil {
		return p.gray(s)
	}
	switch {
	case c.Status == "True":
		return p.paint("32", s)
	case c.Severity == "Error":
		return p.paint("31", s)
	case c.Severity == "Warning":
		return p.paint("33", s)
	}
	return p.paint("37", s)
}

type renderer struct {
	p     palette
	now   time.Time
	width int
	rows  [][]string
	v1    bool
}

// Render writes the tree as clusterctl's aligned table with tree prefixes.
func Render(w io.Writer, t *Tree, o RenderOptions) error {
	r := &renderer{p: palette{on: o.Color}, now: o.Now, width: o.MessageWidth, v1: t.V1Beta1}
	if r.now.IsZero() {
		r.now = time.Now()
	}
	if r.width <= 0 {
		r.width = 100
	}
	if t.V1Beta1 {
		r.rows = append(r.rows, []string{"NAME", "READY", "SEVERITY", "REASON", "SINCE", "MESSAGE"})
	} else {
		r.rows = append(r.rows, []string{"NAME", "REPLICAS", "AVAILABLE", "READY", "UP TO DATE", "STATUS", "REASON", "SINCE", "MESSAGE"})
	}
	r.addNode("", t.Root)
	if err := writeAligned(w, r.rows); err != nil {
		return err
	}
	if len(t.Unread) > 0 {
		_, err := io.WriteString(w, authz.PartialViewNote(t.Unread))
		return err
	}
	return nil
}

func (r *renderer) since(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := r.now.Sub(t)
	if d < 0 {
		d = 0
	}
	return duration.HumanDuration(d)
}

func (r *renderer) row(cells ...string) { r.rows = append(r.rows, cells) }

// blankRow is a continuation row: the tree prefix and a message line.
func (r *renderer) blankRow(prefix, msg string) {
	cells := make([]string, len(r.rows[0]))
	cells[0] = r.p.gray(prefix)
	cells[len(cells)-1] = msg
	r.rows = append(r.rows, cells)
}

func (r *renderer) name(n *Node) string {
	switch n.Category {
	case CategoryGroup:
		return r.p.group(n.rowName())
	case CategoryVirtual:
		return n.Name
	}
	name := n.Kind + " " + r.p.bold(n.objectRef())
	if n.Version != "" {
		name += ", " + n.Version
	}
	if n.Deleting {
		name = r.p.red("!! DELETED !!") + " " + name
	}
	return name
}

func count(v *int32) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(*v)
}

func (r *renderer) addNode(prefix string, n *Node) {
	name := r.p.gray(prefix) + r.name(n)
	var msgLines []string
	var cells []string
	if r.v1 {
		ready := n.v1beta1Ready()
		var status, severity, reason, since, msg string
		if ready != nil {
			status, severity, reason, since, msg = ready.Status, ready.Severity, ready.Reason, r.since(ready.LastTransitionTime), ready.Message
		}
		msg = r.special(n, msg)
		msgLines = wrapMessage(msg, r.width)
		cells = []string{name, r.p.v1beta1(ready, status), r.p.v1beta1(ready, severity), r.p.v1beta1(ready, reason), since, first(msgLines)}
	} else {
		var replicas, avail, ready, upToDate string
		if rp := n.Replicas; rp != nil {
			if rp.Current != nil && rp.Desired != nil {
				replicas = fmt.Sprintf("%d/%d", *rp.Current, *rp.Desired)
			}
			avail, ready, upToDate = count(rp.Available), count(rp.Ready), count(rp.UpToDate)
		}
		switch n.Category {
		case CategoryMachine:
			replicas = "1"
			avail, ready, upToDate = "0", "0", "0"
			if c := n.condition(availableCondition); c != nil && c.Status == "True" {
				avail = "1"
			}
			if c := n.condition(readyCondition); c != nil && c.Status == "True" {
				ready = "1"
			}
			if c := n.condition(upToDateCondition); c != nil && c.Status == "True" {
				upToDate = "1"
			}
		case CategoryGroup:
			avail, ready, upToDate = fmt.Sprint(n.Group.Available), fmt.Sprint(n.Group.Ready), fmt.Sprint(n.Group.UpToDate)
		case CategoryHealthCheck:
			if hc := n.HealthCheck; hc != nil {
				replicas = fmt.Sprint(hc.Selected)
				ready = fmt.Sprint(hc.Selected - len(hc.Unhealthy))
			}
		}
		var status, reason, since, msg string
		c := n.rowCondition()
		if n.Category == CategoryMachinePool {
			if c = n.condition(availableCondition); c == nil {
				c = n.condition(readyCondition)
			}
		}
		if c != nil {
			status, reason, since, msg = r.p.status(*c), c.Reason, r.since(c.LastTransitionTime), c.Message
		}
		if n.showConditions != showNone {
			status, reason, since, msg = "", "", "", ""
		}
		msg = r.special(n, msg)
		msgLines = wrapMessage(msg, r.width)
		cells = []string{name, replicas, avail, ready, upToDate, status, reason, since, first(msgLines)}
	}
	r.row(cells...)
	cont := continuation(prefix)
	if len(n.Children) > 0 {
		cont += pipe
	}
	for _, l := range rest(msgLines) {
		r.blankRow(cont, l)
	}
	r.addConditions(prefix, n)
	for i, c := range n.Children {
		r.addNode(childPrefix(prefix, i, len(n.Children)), c)
	}
}

// special adds what some rows show beyond their condition message: the members of a group, the
// machines a health check sees, a missing reference, the cluster's first failing condition.
func (r *renderer) special(n *Node, msg string) string {
	switch {
	case n.Missing:
		return r.p.red("missing: " + n.Error)
	case n.Category == CategoryGroup:
		items := n.Group.Items
		if len(items) <= 2 {
			return r.p.gray("See " + strings.Join(items, ", "))
		}
		return r.p.gray("See " + strings.Join(items[:2], ", ") + ", ...")
	case n.Category == CategoryHealthCheck && n.HealthCheck != nil:
		hc := n.HealthCheck
		s := fmt.Sprintf("%d machine(s) selected, %d unhealthy", hc.Selected, len(hc.Unhealthy))
		if len(hc.Unhealthy) > 0 {
			names := hc.Unhealthy
			more := ""
			if len(names) > 3 {
				names, more = names[:3], ", ..."
			}
			s += ": " + strings.Join(names, ", ") + more
		}
		if msg != "" {
			s += "\n" + msg
		}
		return s
	case n.Category == CategoryCluster && n.FirstFailing != "":
		line := r.p.red("First failing: " + n.FirstFailing)
		if msg == "" {
			return line
		}
		return msg + "\n" + line
	}
	return msg
}

func (r *renderer) addConditions(prefix string, n *Node) {
	if n.showConditions == showNone {
		return
	}
	var shown []Condition
	if r.v1 {
		for _, c := range sortedByType(n.V1Beta1Conditions) {
			if c.Type != readyCondition {
				shown = append(shown, c)
			}
		}
	} else {
		for _, c := range n.Conditions {
			if n.showConditions == showNonZero && c.Type != availableCondition && c.Type != readyCondition && isZero(c) {
				continue
			}
			shown = append(shown, c)
		}
	}
	base := prefix + indent + filler
	if len(n.Children) > 0 {
		base = prefix + pipe + filler
	}
	for i, c := range shown {
		cp := childPrefix(base, i, len(shown))
		lines := wrapMessage(c.Message, r.width)
		name := r.p.gray(cp) + r.p.cyan(c.Type)
		if r.v1 {
			r.row(name, r.p.v1beta1(&c, c.Status), r.p.v1beta1(&c, c.Severity), r.p.v1beta1(&c, c.Reason), r.since(c.LastTransitionTime), first(lines))
		} else {
			r.row(name, "", "", "", "", r.p.status(c), c.Reason, r.since(c.LastTransitionTime), first(lines))
		}
		for _, l := range rest(lines) {
			r.blankRow(continuation(cp), l)
		}
	}
}

// isZero: a condition in its normal state with no message (hidden by a trailing "+").
func isZero(c Condition) bool {
	switch c.Status {
	case "Unknown":
		return false
	case "False":
		if !negativePolarity[c.Type] {
			return false
		}
	case "True":
		if negativePolarity[c.Type] {
			return false
		}
	}
	return c.Message == ""
}

// continuation turns a row prefix into the prefix of the lines below it: branches become pipes
// where more siblings follow, and blanks where they do not.
func continuation(prefix string) string {
	s := strings.ReplaceAll(prefix, firstElem, pipe)
	return strings.ReplaceAll(s, lastElem, indent)
}

func childPrefix(prefix string, i, n int) string {
	if i < n-1 {
		return continuation(prefix) + firstElem
	}
	return continuation(prefix) + lastElem
}

func first(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

func rest(lines []string) []string {
	if len(lines) < 2 {
		return nil
	}
	return lines[1:]
}

// wrapMessage splits a message into lines: its own line breaks are kept, long lines are wrapped
// at word boundaries to width (a word longer than width stays whole, never cut), and continued
// lines keep the indentation of their line (plus two spaces under a "* " bullet).
func wrapMessage(msg string, width int) []string {
	if msg == "" {
		return nil
	}
	var out []string
	for _, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		line = strings.TrimRight(line, " \t\r")
		lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
		contIndent := lead
		if strings.HasPrefix(strings.TrimLeft(line, " "), "* ") {
			contIndent += "  "
		}
		words := strings.Fields(line)
		if len(words) == 0 {
			out = append(out, "")
			continue
		}
		cur := lead
		curHasWord := false
		for _, w := range words {
			if curHasWord && runewidth.StringWidth(cur)+1+runewidth.StringWidth(w) > width {
				out = append(out, cur)
				cur, curHasWord = contIndent, false
			}
			if curHasWord {
				cur += " "
			}
			cur += w
			curHasWord = true
		}
		out = append(out, cur)
	}
	return out
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

func visibleWidth(s string) int { return runewidth.StringWidth(ansi.ReplaceAllString(s, "")) }

// writeAligned prints rows as left-aligned columns two spaces apart, without trailing blanks.
func writeAligned(w io.Writer, rows [][]string) error {
	if len(rows) == 0 {
		return nil
	}
	cols := len(rows[0])
	widths := make([]int, cols)
	for _, row := range rows {
		for i, c := range row {
			if i < cols-1 {
				if n := visibleWidth(c); n > widths[i] {
					widths[i] = n
				}
			}
		}
	}
	var b strings.Builder
	for _, row := range rows {
		var line strings.Builder
		for i, c := range row {
			line.WriteString(c)
			if i < cols-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-visibleWidth(c)+2))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
