package fleetupgrade

import (
	"context"
	"time"
)

// onePatch is how a change that is one patch then a wait runs on one cluster (a machine
// rotation, a ClusterClass rebase): done already, nothing is sent; else what an earlier change
// left rolling finishes first, the patch is sent (skipped when a resumed run sent it) and the
// cluster is followed until done says so.
type onePatch struct {
	// step is the report's step (component, version, predictions); name names it in failures.
	step FleetStepReport
	name string
	// goal is what the cluster is once done ("on ClusterClass X"); result is its result then.
	goal, result string
	done         func(ClusterState) (bool, []string)
	// needed says whether the patch is still to send on the cluster as read.
	needed func(ClusterState) bool
	// send sends the patch (a server-side dry run on a dry run) and names what it changed.
	send func(context.Context) ([]string, error)
	// sent is the progress line once sent, asked the line when a resumed run finds it sent.
	sent  func(patched []string) string
	asked string
	// measured, when set, completes the step once done, when this run sent the patch at begin.
	measured func(st *FleetStepReport, begin time.Time)
}

func (cr *clusterRun) runOnePatch(p onePatch) *FleetApplyFailure {
	s, err := cr.a.readState(cr.ctx, cr.info, cr.cu)
	if err != nil {
		return cr.stop("reading the cluster", err, nil)
	}
	if ok, _ := p.done(s); ok {
		cr.cr.Result = ResultUpToDate
		cr.a.req.Progress("  %s: already %s", cr.name, p.goal)
		return nil
	}
	sr := p.step
	if cr.a.req.DryRun {
		patched, err := p.send(context.WithoutCancel(cr.ctx))
		sr.Patched, sr.Done = patched, err == nil
		cr.cr.Steps = append(cr.cr.Steps, sr)
		if err != nil {
			return cr.stop(p.name, err, nil)
		}
		cr.cr.Result = ResultWouldPatch
		cr.a.req.Progress("  %s: would set %s (dry run)", cr.name, p.name)
		return nil
	}
	begin := time.Now()
	if p.needed(s) {
		// What an earlier change left rolling finishes before the patch.
		if failed := cr.waitSettled("", ""); failed != nil {
			return failed
		}
		if cr.userCtx.Err() != nil || cr.gctx.Err() != nil {
			return cr.stop(p.name, cr.userCtx.Err(), nil)
		}
		// The patch runs to its end even when Ctrl-C arrives meanwhile: it stops after it.
		patched, err := p.send(context.WithoutCancel(cr.ctx))
		sr.Patched = patched
		if err != nil {
			cr.cr.Steps = append(cr.cr.Steps, sr)
			return cr.stop(p.name, err, nil)
		}
		if len(patched) > 0 {
			cr.a.req.Progress("  %s: %s", cr.name, p.sent(patched))
		} else {
			cr.a.req.Progress("  %s: %s", cr.name, p.asked)
		}
	} else {
		cr.a.req.Progress("  %s: %s", cr.name, p.asked)
	}
	cr.cr.Steps = append(cr.cr.Steps, sr)
	last, err := cr.a.poll(cr.ctx, cr.cu, cr.info, p.done)
	st := &cr.cr.Steps[len(cr.cr.Steps)-1]
	st.Seconds = since(begin)
	if err != nil {
		return cr.stop(p.name, err, last)
	}
	st.Done = true
	cr.cr.Result = p.result
	detail := ""
	if p.measured != nil && len(st.Patched) > 0 {
		p.measured(st, begin)
		detail = " (" + replacedText(st.Replaced) + ")"
	}
	cr.a.req.Progress("  %s: %s in %.0fs%s", cr.name, p.goal, since(begin), detail)
	return nil
}
