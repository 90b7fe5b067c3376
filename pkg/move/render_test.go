package move

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestMoveDryRunShowsUnfinished: a dry run names unfinished moves and backups.
func TestMoveDryRunShowsUnfinished(t *testing.T) {
	var out strings.Builder
	res := &Result{Pending: []Unfinished{{MoveID: "backup-x", Namespace: "team-a", Phase: "backup", Directory: "/tmp/bk", Paused: 2, Scope: Scope{Namespace: "team-a"}}}}
	if err := RenderPlan(&out, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "interrupted backup") || !strings.Contains(out.String(), "/tmp/bk") || !strings.Contains(out.String(), "team-a/capctl-move-journal") {
		t.Errorf("dry run output:\n%s", out.String())
	}
}

// TestPlanViewJSON: the dry run's document without a plan keeps its keys (levels null,
// clusters empty) and leaves out the contracts when no target was given.
func TestPlanViewJSON(t *testing.T) {
	b, err := json.Marshal(NewPlanView(&Result{PlanSource: "https://src", Contracts: Contracts{Source: "v1beta1"}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"source":"https://src","objects":0,"levels":null,"clusters":{}}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestReportText(t *testing.T) {
	rep := &Report{Created: 3, Updated: 1, AlreadyPresent: 1, Deleted: 4, AlreadyDeleted: 1, Seconds: 2.04, Clusters: []string{"a/c"},
		SourceRequests: 10, TargetRequests: 12, KeptInSource: 1, UserPaused: []string{"a/c2"}, Verified: true, Objects: 5,
		Excluded: []Exclusion{{Object: Ref{Kind: "Secret", Namespace: "a", Name: "x"}, Reason: "why"}}, Warnings: []string{"careful"}}
	res := &Result{Report: rep, Source: "https://src", Target: "https://dst"}
	var b bytes.Buffer
	if err := (ReportText{Result: res}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `Moved 5 objects from https://src to https://dst in 2.0s (1 Clusters, 0 ClusterClasses; API requests: source 10, target 12).
In the target: 3 created, 1 brought back to their pre-move copy, 1 already there as they should be.
Deleted from the source: 4 (and 1 an earlier run had deleted).
1 objects were copied and kept in the source (shared ClusterClasses and their templates, global objects).
Still paused, as their users left them: a/c2
Verified: before anything was deleted, the target held the same 5 objects as the source before the move (kinds, names, labels, annotations, finalizers, owners, spec, data).
Not moved (1):
  Secret/a/x: why
Warning: careful
`
	if b.String() != want {
		t.Errorf("move: got:\n%s\nwant:\n%s", b.String(), want)
	}

	// A backup counts what it wrote; a failed run prints no counts, only what did not move.
	rep.Written, rep.Scope = 7, Scope{Namespace: "a"}
	b.Reset()
	if err := (ReportText{Result: res, ToDirectory: true}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "Wrote 7 objects from https://src (namespace a) to https://dst in 2.0s") || strings.Contains(b.String(), "Deleted from the source") {
		t.Errorf("backup: got:\n%s", b.String())
	}
	b.Reset()
	if err := (ReportText{Result: res, Err: errors.New("boom")}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "Not moved (1):\n  Secret/a/x: why\nWarning: careful\n"; b.String() != want {
		t.Errorf("failed run: got %q, want %q", b.String(), want)
	}
}
