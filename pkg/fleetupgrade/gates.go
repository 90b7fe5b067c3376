package fleetupgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/capctl/capctl/internal/childproc"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/health"
)

// Duration is a time.Duration written as "30s" or "2h0m0s" in plan files.
type Duration time.Duration

// MarshalJSON writes the duration as Go writes it ("1m30s").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "1m30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string like \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Gates after a wave, and the gate that keeps waves in their window.
const (
	GateSoak    = "soak"
	GateCommand = "gate-command"
	GateWindow  = "window"
	GatePlan    = "plan"
)

// GateResult is one gate run after a wave: the soak or the gate command.
type GateResult struct {
	Gate    string  `json:"gate"`
	Passed  bool    `json:"passed"`
	Seconds float64 `json:"seconds"`
	// Reason says why it did not pass: the cluster and the finding, or the exit status.
	Reason string `json:"reason,omitempty"`
	// Output is the gate command's output (stdout and stderr, the first gateOutputMax bytes).
	Output []string `json:"output,omitempty"`
}

// gateOutputMax bounds the gate command's output kept for the report and the audit record.
const gateOutputMax = 16 << 10

// errSoakFinding ends the soak's poll when a cluster fails it.
var errSoakFinding = errors.New("soak finding")

// soaked are the wave's clusters a soak watches: those the change is done with.
func soaked(w FleetWave, wr *FleetWaveReport) []ClusterUpgrade {
	var out []ClusterUpgrade
	for i, cu := range w.Clusters {
		if resultDone(wr.Clusters[i].Result) {
			out = append(out, cu)
		}
	}
	return out
}

// soak watches the wave's clusters for Rollout.Soak: each must stay Available, none of its
// Machines may be marked unhealthy or remediated by a MachineHealthCheck, and `capctl diagnose`'s
// rules may find nothing new about it (what they found when the soak began is its baseline).
// The first problem stops the soak, naming the cluster, what was found and the evidence.
func (a *fleetApplier) soak(ctx context.Context, w FleetWave, wr *FleetWaveReport) (GateResult, *FleetStop) {
	d := time.Duration(a.req.Rollout.Soak)
	clusters := soaked(w, wr)
	a.req.Progress("Wave %s: soaking %s: %d cluster(s) must stay Available, without MachineHealthCheck remediation or a new diagnose finding", w.Name(), d, len(clusters))
	start := time.Now()
	baseline := map[string]map[string]bool{}
	var stop *FleetStop
	// At least ten looks per soak: a soak shorter than the poll interval still watches. The
	// soak is over at the first look after its duration (the poll's own bound is a margin).
	interval := max(min(a.req.PollInterval, d/10), 10*time.Millisecond)
	err := cluster.Poll(ctx, interval, d+2*interval, func(ctx context.Context) (bool, error) {
		for _, cu := range clusters {
			if problem, evidence := a.soakCheck(ctx, cu, baseline); problem != "" {
				stop = &FleetStop{At: "after wave " + w.Name(), Gate: GateSoak, Reason: fmt.Sprintf("cluster %s %s during the soak", cu.Ref(), problem), Details: evidence}
				return false, errSoakFinding
			}
		}
		return time.Since(start) >= d, nil
	})
	res := GateResult{Gate: GateSoak, Seconds: since(start)}
	switch {
	case stop != nil:
		res.Reason = stop.Reason
		a.req.Progress("Wave %s: soak FAILED: %s", w.Name(), stop.Reason)
		return res, stop
	case ctx.Err() != nil:
		res.Reason = "interrupted"
		return res, nil
	case err != nil && !errors.Is(err, cluster.ErrTimedOut):
		res.Reason = err.Error()
		return res, &FleetStop{At: "after wave " + w.Name(), Gate: GateSoak, Reason: err.Error()}
	}
	res.Passed = true
	a.req.Progress("Wave %s: soak passed (%.0fs)", w.Name(), res.Seconds)
	return res, nil
}

// soakCheck reads one cluster and says what is wrong with it (empty: nothing), with the
// evidence. A read that fails after cluster.CheckRead's retries is a problem: the soak cannot vouch for
// what it could not see. An interrupted read is none (the run stops as interrupted).
func (a *fleetApplier) soakCheck(ctx context.Context, cu ClusterUpgrade, baseline map[string]map[string]bool) (string, []string) {
	unread := func(err error) (string, []string) {
		if ctx.Err() != nil {
			return "", nil
		}
		var gone *cluster.ClusterNotFoundError
		if apierrors.IsNotFound(err) || errors.As(err, &gone) {
			return "was deleted", []string{fmt.Sprintf("Cluster %s/%s no longer exists: %v", cu.Namespace, cu.Name, err)}
		}
		return "could not be read", []string{"a soak that cannot read what it checks fails: " + err.Error()}
	}
	var s ClusterState
	if err := cluster.CheckRead(ctx, func(ctx context.Context) (err error) {
		s, err = a.readState(ctx, a.infos[cu.Ref()], cu)
		return err
	}); err != nil {
		return unread(err)
	}
	if st, msg := condition(s.Cluster, "Available"); st != "True" {
		return "stopped being Available", []string{"Cluster " + conditionLine("Available", st, msg)}
	}
	for i := range s.Machines {
		m := &s.Machines[i]
		if st, msg := condition(m, "OwnerRemediated"); st != "" {
			return fmt.Sprintf("had Machine %s remediated by its MachineHealthCheck", m.GetName()), []string{"Machine " + m.GetName() + " " + conditionLine("OwnerRemediated", st, msg)}
		}
		if st, msg := condition(m, "HealthCheckSucceeded"); st == "False" {
			return fmt.Sprintf("had Machine %s found unhealthy by its MachineHealthCheck", m.GetName()), []string{"Machine " + m.GetName() + " " + conditionLine("HealthCheckSucceeded", st, msg)}
		}
	}
	var problems []health.Problem
	var unreadKinds []string
	if err := cluster.CheckRead(ctx, func(ctx context.Context) (err error) {
		problems, unreadKinds, err = a.req.Health(ctx, a.clients[cu.ManagementCluster], cu.Namespace, cu.Name)
		return err
	}); err != nil {
		return unread(fmt.Errorf("diagnosing the cluster: %w", err))
	}
	if len(unreadKinds) > 0 {
		evidence := make([]string, 0, len(unreadKinds))
		for _, u := range unreadKinds {
			evidence = append(evidence, "diagnose could not read "+u+" (a soak that cannot read what it checks fails)")
		}
		return "could not be diagnosed in full", evidence
	}
	ref := cu.Ref()
	first := baseline[ref] == nil
	if first {
		baseline[ref] = map[string]bool{}
	}
	for _, p := range problems {
		if first {
			baseline[ref][p.Key] = true
			continue
		}
		if !baseline[ref][p.Key] {
			return fmt.Sprintf("got a new diagnose finding %s: %s", p.Rule, p.Summary), p.Evidence
		}
	}
	return "", nil
}

// gateCommand runs Rollout.GateCommand through /bin/sh after the wave (and its soak), with the
// wave, its clusters and the plan's digest in its environment. A non-zero exit stops the
// rollout; its output is shown either way.
func (a *fleetApplier) gateCommand(ctx context.Context, wi, waves int, w FleetWave, digest string) (GateResult, *FleetStop) {
	refs := make([]string, 0, len(w.Clusters))
	for _, cu := range w.Clusters {
		r := cu.Namespace + "/" + cu.Name
		if cu.ManagementCluster != "" {
			r += "@" + cu.ManagementCluster
		}
		refs = append(refs, r)
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", a.req.Rollout.GateCommand)
	cmd.Env = append(os.Environ(),
		"CAPCTL_WAVE="+w.Name(),
		"CAPCTL_WAVE_INDEX="+strconv.Itoa(wi+1),
		"CAPCTL_WAVES="+strconv.Itoa(waves),
		"CAPCTL_CLUSTERS="+strings.Join(refs, ","),
		"CAPCTL_PLAN_DIGEST="+digest,
	)
	cmd.Env = append(cmd.Env, a.change.gateEnv()...)
	out := &boundedBuffer{max: gateOutputMax}
	cmd.Stdout, cmd.Stderr = out, out
	a.req.Progress("Wave %s: running the gate command", w.Name())
	start := time.Now()
	// Its own process group: Ctrl-C ends the command and all it started, and a child it leaves
	// in the background neither holds the rollout nor outlives the gate.
	err := childproc.Run(cmd)
	res := GateResult{Gate: GateCommand, Seconds: since(start), Output: out.lines()}
	if errors.Is(err, childproc.ErrLeftChildren) {
		a.req.Progress("Wave %s: %v", w.Name(), err)
		err = nil
	}
	for _, l := range res.Output {
		a.req.Progress("  gate: %s", l)
	}
	if err == nil {
		res.Passed = true
		a.req.Progress("Wave %s: gate command passed (%.0fs)", w.Name(), res.Seconds)
		return res, nil
	}
	if ctx.Err() != nil {
		res.Reason = "interrupted"
		return res, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		res.Reason = fmt.Sprintf("the gate command exited with status %d", exit.ExitCode())
	} else {
		res.Reason = "the gate command could not run: " + err.Error()
	}
	a.req.Progress("Wave %s: gate FAILED: %s", w.Name(), res.Reason)
	return res, &FleetStop{At: "after wave " + w.Name(), Gate: GateCommand, Reason: res.Reason, Details: res.Output}
}

// boundedBuffer keeps the first max bytes written to it and counts the rest.
type boundedBuffer struct {
	max     int
	buf     []byte
	dropped int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := b.max - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
	} else {
		b.buf = append(b.buf, p[:max(room, 0)]...)
		b.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (b *boundedBuffer) lines() []string {
	s := strings.TrimRight(string(b.buf), "\n")
	var out []string
	if s != "" {
		out = strings.Split(s, "\n")
	}
	if b.dropped > 0 {
		out = append(out, fmt.Sprintf("(%d more bytes not kept)", b.dropped))
	}
	return out
}

// awaitWindow holds the wave until the window is open: it waits (saying so) or, with NoWait,
// stops the run, telling when the window opens next. It returns a stop, or whether it waited.
func (a *fleetApplier) awaitWindow(ctx context.Context, w FleetWave) (bool, *FleetStop) {
	win := a.window
	if win == nil {
		return false, nil
	}
	now := time.Now()
	if ok, _ := win.Open(now); ok {
		return false, nil
	}
	next := win.Next(now)
	when := fmt.Sprintf("%s (%s, in %s)", next.Format("Mon 2006-01-02 15:04 MST"), next.UTC().Format(time.RFC3339), time.Until(next).Round(time.Second))
	if a.req.NoWait {
		return false, &FleetStop{At: "before wave " + w.Name(), Gate: GateWindow, Reason: fmt.Sprintf("outside the window %s; it opens next %s: run the same command again then", win, when)}
	}
	a.req.Progress("Wave %s: waiting for the window %s, it opens %s", w.Name(), win, when)
	for ctx.Err() == nil {
		wait := time.Until(win.Next(time.Now()))
		interval := min(max(wait/10, time.Second), 30*time.Second)
		err := cluster.Poll(ctx, interval, wait+2*interval, func(context.Context) (bool, error) {
			ok, _ := win.Open(time.Now())
			return ok, nil
		})
		if err == nil {
			a.req.Progress("Wave %s: the window %s is open", w.Name(), win)
			return true, nil
		}
	}
	return true, nil
}
