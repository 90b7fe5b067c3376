package move

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
)

// The fault matrix runs a move (or a backup) in a child process — this test binary re-executed —
// that kills itself with SIGKILL (or stops itself with SIGTERM) when Options.Hook reports the
// chosen phase and count: a real process death at a deterministic point. The parent then re-runs
// the move, or resumes it, and checks the clusters.
const faultChildEnv = "CAPCTL_MOVE_FAULT_CHILD"

// runFaultChild is the child's main: CAPCTL_MOVE_FAULT_CHILD=move|backup|restore, with the kubeconfigs,
// namespace, directory and kill point in the environment. Exit 0 means the move finished
// without reaching the kill point.
func runFaultChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := cluster.New(cluster.Options{Kubeconfig: os.Getenv("FAULT_SRC")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	phase := os.Getenv("FAULT_PHASE")
	at, _ := strconv.Atoi(os.Getenv("FAULT_AT"))
	sig := syscall.SIGKILL
	if os.Getenv("FAULT_SIGNAL") == "TERM" {
		sig = syscall.SIGTERM
	}
	var sent atomic.Bool
	par := 4
	if v, err := strconv.Atoi(os.Getenv("FAULT_PARALLELISM")); err == nil {
		par = v
	}
	opts := Options{Scope: Scope{Namespace: os.Getenv("FAULT_NS")}, Parallelism: par, AcceptConversionLoss: os.Getenv("FAULT_ACCEPT_LOSS") != "",
		Hook: func(p string, done int) {
			if p == phase && done >= at && sent.CompareAndSwap(false, true) {
				_ = syscall.Kill(os.Getpid(), sig)
			}
		}}
	switch os.Getenv(faultChildEnv) {
	case "backup":
		_, err = ToDirectory(ctx, src, os.Getenv("FAULT_DIR"), opts)
	case "restore": // FAULT_SRC is the restore's target
		_, err = FromDirectory(ctx, src, os.Getenv("FAULT_DIR"), opts)
	default:
		dst, derr := cluster.New(cluster.Options{Kubeconfig: os.Getenv("FAULT_DST")})
		if derr != nil {
			fmt.Fprintln(os.Stderr, derr)
			return 2
		}
		var rep *Report
		rep, err = Move(ctx, src, dst, opts)
		if err == nil && os.Getenv("FAULT_REPORT") != "" {
			_ = json.NewEncoder(os.Stdout).Encode(rep)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// faultChild runs the child and returns its error output; it fails the test unless the child
// died of SIGKILL (or, for SIGTERM, exited with an error after stopping cleanly).
func faultChild(t *testing.T, mode string, src, dst *testenv.Env, ns, dir, phase string, at int, sig string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	env := []string{faultChildEnv + "=" + mode, "FAULT_SRC=" + src.Kubeconfig, "FAULT_NS=" + ns, "FAULT_DIR=" + dir,
		"FAULT_PHASE=" + phase, "FAULT_AT=" + strconv.Itoa(at), "FAULT_SIGNAL=" + sig}
	if dst != nil {
		env = append(env, "FAULT_DST="+dst.Kubeconfig)
	}
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the child never reached %s %d (err %v):\n%s", phase, at, err, stderr.String())
	}
	ws := exit.Sys().(syscall.WaitStatus)
	if sig == "TERM" {
		if ws.Signaled() || ws.ExitStatus() != 1 {
			t.Fatalf("after SIGTERM the child should stop cleanly with an error; got %v:\n%s", ws, stderr.String())
		}
	} else if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed at %s %d: %v\n%s", phase, at, err, stderr.String())
	}
	return stderr.String()
}

// faultFleetSize is the number of objects faultFleet writes (it checks).
const faultFleetSize = 35

// faultFleet writes a small fleet: a cluster with workers and one its user paused.
func faultFleet(t *testing.T, env *testenv.Env, ns string) int {
	env.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: env.Client, ns: ns}
	return b.addCluster("a", clusterOpts{cpCount: 1, workers: 2}) + b.addCluster("b", clusterOpts{cpCount: 1, workers: 1, paused: true})
}

// requireMoved checks the end state of every fault: the target holds exactly the pre-move source
// (kinds, names, labels, annotations, finalizers, owners, spec, data), the source holds nothing
// (no journal either), nothing capctl paused is paused, and no delete-for-move anywhere.
func requireMoved(t testing.TB, before map[string]*unstructured.Unstructured, src, dst *cluster.Client, ns string) {
	t.Helper()
	if left := snapshot(t, src, ns); len(left) != 0 {
		t.Errorf("left in the source: %v", keys(left))
	}
	got := snapshot(t, dst, ns)
	for _, k := range keys(before) {
		b, g := before[k], got[k]
		if g == nil {
			t.Errorf("%s: missing in the target", k)
			continue
		}
		requireSameObject(t, k, b, g)
	}
	for _, k := range keys(got) {
		if before[k] == nil {
			t.Errorf("%s: in the target but not in the source before the move", k)
		}
		if _, ok := got[k].GetAnnotations()[DeleteForMoveAnnotation]; ok {
			t.Errorf("%s carries %s in the target", k, DeleteForMoveAnnotation)
		}
	}
}

// requireSameObject checks that g is b as a move keeps it: labels, annotations, finalizers,
// owners, spec and data.
func requireSameObject(t testing.TB, k string, b, g *unstructured.Unstructured) {
	t.Helper()
	if !equality.Semantic.DeepEqual(nilIfEmpty(b.GetLabels()), nilIfEmpty(g.GetLabels())) {
		t.Errorf("%s: labels %v, want %v", k, g.GetLabels(), b.GetLabels())
	}
	if !equality.Semantic.DeepEqual(nilIfEmpty(b.GetAnnotations()), nilIfEmpty(g.GetAnnotations())) {
		t.Errorf("%s: annotations %v, want %v", k, g.GetAnnotations(), b.GetAnnotations())
	}
	if fb, fg := b.GetFinalizers(), g.GetFinalizers(); !(len(fb) == 0 && len(fg) == 0) && !equality.Semantic.DeepEqual(fb, fg) {
		t.Errorf("%s: finalizers %v, want %v", k, fg, fb)
	}
	if owners(b) != owners(g) {
		t.Errorf("%s: owners %s, want %s", k, owners(g), owners(b))
	}
	if !equality.Semantic.DeepEqual(content(b), content(g)) {
		t.Errorf("%s: spec/data differ", k)
	}
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// TestMoveFaultMatrix kills the move process at every phase, then finishes the move by
// re-running the same command and, separately, with --resume. A new phase is one row.
func TestMoveFaultMatrix(t *testing.T) {
	src, dst := sharedPair(t)
	const total = faultFleetSize
	const deletable = total // every object of the fleet is deleted from the source
	rows := []struct {
		name, phase string
		at          int
		noJournal   bool   // killed before the journal exists: --resume has nothing to resume
		sig         string // KILL (default) or TERM: Ctrl-C or a service manager stopping it
	}{
		{name: "discover", phase: "discover", at: 0, noJournal: true},
		{name: "journal", phase: "journal", at: 0},
		{name: "pause", phase: "pause", at: 1},
		{name: "create-1", phase: "create", at: 1},
		{name: "create-half", phase: "create", at: total / 2},
		{name: "create-last", phase: "create", at: total},
		{name: "verify", phase: "verify", at: 0},
		{name: "deleting", phase: "deleting", at: 0},
		{name: "delete-1", phase: "delete", at: 1},
		{name: "delete-unfinalized", phase: "unfinalized", at: 3}, // a source object stripped but not deleted
		{name: "delete-half", phase: "delete", at: deletable / 2},
		{name: "delete-90pct", phase: "delete", at: deletable * 9 / 10},
		{name: "delete-last", phase: "delete", at: deletable},
		{name: "unpause", phase: "unpause", at: 1},
		{name: "term-create-half", phase: "create", at: total / 2, sig: "TERM"},
		{name: "term-delete-half", phase: "delete", at: deletable / 2, sig: "TERM"},
	}
	for _, row := range rows {
		for _, how := range []string{"rerun", "resume"} {
			t.Run(row.name+"/"+how, func(t *testing.T) {
				t.Parallel()
				ctx := testenv.Context(t)
				ns := "fm-" + row.name + "-" + how
				if n := faultFleet(t, src, ns); n != total {
					t.Fatalf("fleet of %d objects, want %d", n, total)
				}
				before := snapshot(t, src.Client, ns)
				sig := row.sig
				if sig == "" {
					sig = "KILL"
				}
				faultChild(t, "move", src, dst, ns, "", row.phase, row.at, sig)
				if sig == "TERM" && row.phase == "create" {
					// Stopped before deleting: the source is intact and unpaused at once.
					left := withoutJournal(t, snapshot(t, src.Client, ns), true)
					if p := pausedState(t, left); len(left) != total || len(p) != 1 || p[0] != "Cluster/b" {
						t.Errorf("after SIGTERM while creating: %d of %d objects in the source, paused %v", len(left), total, p)
					}
				}

				opts := Options{Scope: Scope{Namespace: ns}, Resume: how == "resume"}
				rep, err := Move(ctx, src.Client, dst.Client, opts)
				if how == "resume" && row.noJournal {
					if err == nil || !strings.Contains(err.Error(), "nothing to resume") {
						t.Fatalf("--resume before any journal: %v", err)
					}
					opts.Resume = false
					rep, err = Move(ctx, src.Client, dst.Client, opts)
				}
				if err != nil {
					t.Fatalf("finishing the move after a kill at %s %d: %v (differences %v)", row.phase, row.at, err, rep.Differences)
				}
				if !rep.Verified || (!row.noJournal && !rep.Resumed) {
					t.Errorf("report: verified %v resumed %v", rep.Verified, rep.Resumed)
				}
				if rep.Created+rep.Updated+rep.AlreadyPresent != total || rep.Deleted+rep.AlreadyDeleted != total {
					t.Errorf("counts: created %d updated %d present %d deleted %d already deleted %d, want %d", rep.Created, rep.Updated, rep.AlreadyPresent, rep.Deleted, rep.AlreadyDeleted, total)
				}
				requireMoved(t, before, src.Client, dst.Client, ns)
			})
		}
	}
}

// TestMoveTargetLostAndRebuilt kills a move half-way through deleting, replaces the target with a
// new, empty API server, and checks the way forward: the plain re-run is refused with advice that
// works, and --resume --restart-target re-creates everything there from the journal's copy.
func TestMoveTargetLostAndRebuilt(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	const ns = "fault-rebuilt"
	total := faultFleet(t, src, ns)
	before := snapshot(t, src.Client, ns)
	faultChild(t, "move", src, dst, ns, "", "delete", total/2, "KILL")

	rebuilt := testenv.Start(t, testenv.Options{CRDPaths: pairCRDs})
	prepareManagementCluster(t, rebuilt)
	for _, resume := range []bool{false, true} {
		_, err := Move(ctx, src.Client, rebuilt.Client, Options{Scope: Scope{Namespace: ns}, Resume: resume})
		if !errors.Is(err, ErrOtherTarget) || !strings.Contains(err.Error(), "--resume --restart-target") || !strings.Contains(err.Error(), "kube-system UID") {
			t.Fatalf("a move towards the rebuilt target (resume %v): %v", resume, err)
		}
	}
	if got := snapshot(t, rebuilt.Client, ns); len(got) != 0 {
		t.Fatalf("a refused move wrote to the rebuilt target: %v", keys(got))
	}
	rep, err := Move(ctx, src.Client, rebuilt.Client, Options{Scope: Scope{Namespace: ns}, Resume: true, RestartTarget: true})
	if err != nil {
		t.Fatalf("--resume --restart-target: %v", err)
	}
	if rep.Created != total || !rep.Verified {
		t.Errorf("restart report: created %d of %d, verified %v", rep.Created, total, rep.Verified)
	}
	requireMoved(t, before, src.Client, rebuilt.Client, ns)
	// --restart-target without an unfinished move is refused.
	if _, err := Move(ctx, src.Client, rebuilt.Client, Options{Scope: Scope{Namespace: ns}, Resume: true, RestartTarget: true}); err == nil {
		t.Error("--restart-target without an unfinished move was accepted")
	}
}

// TestBackupFaults kills (SIGKILL) and stops (SIGTERM) a --to-directory backup half-way: the
// source must end unpaused and unchanged, the directory absent (never half written), a dry run
// must show the interrupted backup, and a re-run must undo it and write a complete backup.
func TestBackupFaults(t *testing.T) {
	src, _ := sharedPair(t)
	for _, tc := range []struct{ name, phase, sig string }{
		{"kill-pause", "pause", "KILL"}, {"kill-write", "write", "KILL"}, {"term-write", "write", "TERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testenv.Context(t)
			ns := "fb-" + tc.name
			total := faultFleet(t, src, ns)
			before := snapshot(t, src.Client, ns)
			dir := filepath.Join(t.TempDir(), "backup")
			faultChild(t, "backup", src, nil, ns, dir, tc.phase, max(1, total/2*boolInt(tc.phase == "write")), tc.sig)
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the interrupted backup left %s behind (%v)", dir, err)
			}
			entries, _ := os.ReadDir(filepath.Dir(dir))
			pending, err := PendingMoves(ctx, src.Client)
			if err != nil {
				t.Fatal(err)
			}
			mine := 0
			for _, p := range pending {
				if p.Namespace == ns {
					mine++
					if !strings.Contains(p.String(), "interrupted backup") || !strings.Contains(p.String(), dir) {
						t.Errorf("pending: %s", p)
					}
				}
			}
			if tc.sig == "TERM" {
				if p := pausedState(t, snapshot(t, src.Client, ns)); mine != 0 || len(p) != 1 || p[0] != "Cluster/b" || len(entries) != 0 {
					t.Fatalf("after SIGTERM: journal %d, paused %v, files %v", mine, pausedState(t, snapshot(t, src.Client, ns)), entries)
				}
			} else if mine != 1 {
				t.Fatalf("a dry run does not show the interrupted backup: %v", pending)
			}
			rep, err := ToDirectory(ctx, src.Client, dir, Options{Scope: Scope{Namespace: ns}})
			if err != nil {
				t.Fatalf("re-running the backup: %v", err)
			}
			if tc.sig == "KILL" && !strings.Contains(strings.Join(rep.Warnings, "\n"), "had been interrupted") {
				t.Errorf("the re-run did not say it undid the interrupted backup: %v", rep.Warnings)
			}
			if rep.Written != total {
				t.Errorf("wrote %d objects, the fleet has %d", rep.Written, total)
			}
			if _, g, err := ReadBackup(context.Background(), dir, 0); err != nil || g.Count() != total {
				t.Fatalf("the backup is not complete: %v", err)
			}
			after := snapshot(t, src.Client, ns)
			if p := pausedState(t, after); len(p) != 1 || p[0] != "Cluster/b" { // b: paused by its user
				t.Errorf("paused after the backup: %v", p)
			}
			if len(after) != len(before) {
				t.Errorf("the source has %d objects, had %d: %v", len(after), len(before), keys(after))
			}
			for k, b := range before {
				if a := after[k]; a == nil || !equality.Semantic.DeepEqual(content(a), content(b)) || !equality.Semantic.DeepEqual(nilIfEmpty(a.GetAnnotations()), nilIfEmpty(b.GetAnnotations())) {
					t.Errorf("%s changed in the source", k)
				}
			}
			left, _ := os.ReadDir(filepath.Dir(dir))
			var names []string
			for _, e := range left {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			if len(names) != 1 || names[0] != "backup" {
				t.Errorf("beside the backup: %v (a partial folder was left)", names)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRestoreFaults kills (SIGKILL) and stops (SIGTERM, a real signal to the process) a
// --from-directory restore half-way through creating: a stopped restore says how far it got and
// to re-run it; the target then holds only objects of the backup; a re-run completes it, with
// every object of the backup once and only its user's pause left.
func TestRestoreFaults(t *testing.T) {
	src, dst := sharedPair(t)
	for _, sig := range []string{"KILL", "TERM"} {
		t.Run(sig, func(t *testing.T) {
			t.Parallel()
			ctx := testenv.Context(t)
			ns := "fr-" + strings.ToLower(sig)
			total := faultFleet(t, src, ns)
			dir := filepath.Join(t.TempDir(), "backup")
			if _, err := ToDirectory(ctx, src.Client, dir, Options{Scope: Scope{Namespace: ns}}); err != nil {
				t.Fatal(err)
			}
			stderr := faultChild(t, "restore", dst, nil, ns, dir, "create", total/2, sig)
			if sig == "TERM" && !strings.Contains(stderr, "re-run the same restore") {
				t.Errorf("the stopped restore does not say how to finish it:\n%s", stderr)
			}
			mid := snapshot(t, dst.Client, ns)
			if len(mid) == 0 || len(mid) >= total {
				t.Errorf("%d of %d objects in the target after the %s half-way: the fault did not hit mid-restore", len(mid), total, sig)
			}
			inBackup := snapshot(t, src.Client, ns) // a backup leaves its source as it was
			for k := range mid {
				if _, ok := inBackup[k]; !ok {
					t.Errorf("the interrupted restore created %s, which is not in the backup", k)
				}
			}
			rep, err := FromDirectory(ctx, dst.Client, dir, Options{})
			if err != nil {
				t.Fatalf("re-running the restore: %v", err)
			}
			if got := rep.Created + rep.Updated + rep.AlreadyPresent; got != total {
				t.Errorf("the re-run accounts for %d objects, the backup has %d: %+v", got, total, rep)
			}
			after := snapshot(t, dst.Client, ns)
			if len(after) != total {
				t.Errorf("%d objects in the target, the backup has %d: %v", len(after), total, keys(after))
			}
			if p := pausedState(t, after); len(p) != 1 || p[0] != "Cluster/b" {
				t.Errorf("paused after the re-run: %v, want only the user's Cluster/b", p)
			}
		})
	}
}
