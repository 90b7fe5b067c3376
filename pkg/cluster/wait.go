package cluster

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// This file and retry.go are capctl's one home for waiting: Poll (wait for a condition), Sleep
// (one pause that ends with ctx), Retry with its Backoff and IsTransient (try a request again),
// and crd.go's CRD waits on top of them. The rest of pkg/ waits through these, not through
// wait.Poll* or time.After of its own.

// ErrTimedOut is Poll's answer when the timeout passed before the condition held.
var ErrTimedOut = errors.New("timed out")

// Poll is capctl's one wait loop, on apimachinery's wait.PollUntilContextTimeout: it calls done
// at once and then every interval until done reports true or an error, ctx ends (ctx.Err()) or
// timeout passes (ErrTimedOut). done runs on ctx, not on the poll's deadline, so the last check
// completes and can say what is still missing; and Poll stops as soon as no full interval is left
// rather than start a check the deadline would cut short.
func Poll(ctx context.Context, interval, timeout time.Duration, done func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(timeout)
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) {
		ok, err := done(ctx)
		if ok || err != nil {
			return ok, err
		}
		if time.Now().Add(interval).After(deadline) {
			return false, ErrTimedOut
		}
		return false, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, ErrTimedOut), wait.Interrupted(err):
		return ErrTimedOut
	}
	return err
}

// PollUntilCancel is Poll without a timeout of its own: it calls done at once and then every
// interval until done reports true or an error, or ctx ends (ctx.Err()). For waits whose budget
// is the context's deadline (the fleet's per-cluster --timeout).
func PollUntilCancel(ctx context.Context, interval time.Duration, done func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextCancel(ctx, interval, true, done)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Sleep pauses for d, or less when ctx ends first; it returns ctx.Err() then, nil otherwise.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
