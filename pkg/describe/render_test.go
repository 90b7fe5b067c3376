package describe

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestWrapMessage(t *testing.T) {
	long := strings.Repeat("word ", 30) + "end"
	got := wrapMessage(long, 40)
	for _, l := range got {
		if len(l) > 40 {
			t.Errorf("line longer than 40: %q", l)
		}
	}
	if strings.Join(strings.Fields(strings.Join(got, " ")), " ") != strings.Join(strings.Fields(long), " ") {
		t.Errorf("words lost or cut: %q", got)
	}
	// Bullets keep their indentation on wrapped lines; line breaks are kept; long words are not cut.
	got = wrapMessage("* first: aaa bbb ccc\n  * nested: ddd eee\n"+strings.Repeat("x", 50), 16)
	want := []string{"* first: aaa bbb", "  ccc", "  * nested: ddd", "    eee", strings.Repeat("x", 50)}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if wrapMessage("", 10) != nil {
		t.Error("empty message should have no lines")
	}
}

func TestShowConditionsFilter(t *testing.T) {
	for _, tc := range []struct {
		spec, kind, name string
		want             conditionFilter
	}{
		{"", "Machine", "m", showNone},
		{"all", "Machine", "m", showAll},
		{"ALL+", "Cluster", "c", showNonZero},
		{"machine", "Machine", "m", showAll},
		{"Cluster,Machine+", "Machine", "m", showNonZero},
		{"Machine/m1", "Machine", "m2", showNone},
		{"machine/M1+", "Machine", "m1", showNonZero},
		{"KubeadmControlPlane", "Machine", "m", showNone},
	} {
		if got := matchShowConditions(tc.kind, tc.name, tc.spec); got != tc.want {
			t.Errorf("%q on %s/%s: got %d want %d", tc.spec, tc.kind, tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{"Machine, Cluster", "a/b/c", "/x", "Machine/"} {
		if ValidateShowConditions(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := ValidateShowConditions("all,Machine/m1+,Cluster+"); err != nil {
		t.Error(err)
	}
}

func TestColours(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tree := &Tree{Root: &Node{Kind: "Cluster", Namespace: "ns", Name: "c", Category: CategoryCluster,
		Conditions: []Condition{{Type: "Available", Status: "False", Reason: "NotAvailable", LastTransitionTime: now.Add(-time.Minute)}},
		Children: []*Node{{Kind: "Machine", Namespace: "ns", Name: "m", Category: CategoryMachine, Deleting: true,
			Conditions: []Condition{{Type: "Ready", Status: "True", Reason: "Ready"}}, showConditions: showAll},
			{Kind: "Paused", Namespace: "ns", Name: "p", Category: CategoryObject, Conditions: []Condition{{Type: "Ready", Status: "Unknown"}}}},
	}}
	tree.Root.Children[0].Conditions = append(tree.Root.Children[0].Conditions, Condition{Type: "Paused", Status: "True"})
	var plain, coloured bytes.Buffer
	if err := Render(&plain, tree, RenderOptions{Now: now}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("colour without Color:\n%q", plain.String())
	}
	if err := Render(&coloured, tree, RenderOptions{Now: now, Color: true}); err != nil {
		t.Fatal(err)
	}
	out := coloured.String()
	for _, want := range []string{
		"\x1b[31mFalse\x1b[0m",         // positive condition False: red
		"\x1b[33mUnknown\x1b[0m",       // Unknown: yellow
		"\x1b[31m!! DELETED !!\x1b[0m", // deleted object
		"\x1b[36mPaused\x1b[0m",        // condition type: cyan
		"\x1b[31mTrue\x1b[0m",          // negative polarity (Paused) True: red
		"\x1b[32mTrue\x1b[0m",          // Ready True: green
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%q", want, out)
		}
	}
	// Columns line up the same with and without colour.
	strip := ansi.ReplaceAllString(out, "")
	if strip != plain.String() {
		t.Errorf("alignment differs with colour:\n%s\nvs\n%s", strip, plain.String())
	}
}

// The fleet table: one row per cluster in capctl's table style; coloured cells keep the columns
// of the plain table.
func TestRenderSummary(t *testing.T) {
	i := func(v int32) *int32 { return &v }
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rows := []ClusterSummary{
		{Namespace: "default", Name: "prod", Version: "v1.34.1", ControlPlane: Counts{Ready: i(3), Desired: i(3)}, Workers: Counts{Ready: i(10), Desired: i(12)}, Available: "True", Created: now.Add(-49 * time.Hour)},
		{Namespace: "team-a", Name: "going", ControlPlane: Counts{Ready: i(1), Desired: i(3)}, Available: "False", Reason: "NotAvailable", Paused: true, Deleting: true, Created: now.Add(-5 * time.Minute)},
	}
	var plain, coloured bytes.Buffer
	if err := RenderSummary(&plain, rows, RenderOptions{Now: now}); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAMESPACE   NAME                  VERSION   CONTROL PLANE   WORKERS   AVAILABLE   REASON         PAUSED   AGE\n" +
		"default     prod                  v1.34.1   3/3             10/12     True                       false    2d1h\n" +
		"team-a      !! DELETED !! going   -         1/3             -         False       NotAvailable   true     5m\n"
	if plain.String() != want {
		t.Errorf("got\n%s\nwant\n%s", plain.String(), want)
	}
	if err := RenderSummary(&coloured, rows, RenderOptions{Now: now, Color: true}); err != nil {
		t.Fatal(err)
	}
	stripped := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(coloured.String(), "")
	if coloured.String() == plain.String() || stripped != plain.String() {
		t.Errorf("coloured table without its colours:\n%s\nplain:\n%s", stripped, plain.String())
	}
}
