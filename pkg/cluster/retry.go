package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// IsTransient is capctl's one rule for which failed requests are worth sending again, unchanged,
// a moment later:
//
//   - answers that say the server is busy or briefly unwell: 429 Too Many Requests, 500 Internal
//     Error (an etcd leader change, a webhook whose server is starting), 502, 503, 504 and the
//     API server's own ServerTimeout/Timeout reasons;
//   - network errors: a refused or reset connection, a connection closed part-way (EOF, GOAWAY),
//     a request that timed out, a DNS lookup that failed for the moment.
//
// Not transient: every other answer (4xx above all), and a cancelled context.
//
// A 409 Conflict is not transient. It answers a request built from something read before: an
// update carrying a resourceVersion another writer has since moved on, or a server-side apply
// touching fields another manager owns. The same request meets the same conflict however long
// one waits; only the caller can re-read the object and build the request again. A caller whose
// request carries nothing read before (a DELETE without preconditions: the server deletes what
// is there now) re-reads by sending it again, and says so by wrapping the conflict with Again.
//
// A timed-out request cannot be told apart here from the caller's own deadline (both are
// context.DeadlineExceeded): Retry, which holds the caller's ctx, stops when it is done.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := int(status.Status().Code); code != 0 {
			return IsTransientStatus(code) // client-go gives every 5xx it does not know reason InternalError: the code decides
		}
		return !apierrors.IsConflict(err) && (apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
			apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err))
	}
	return isNetworkError(err)
}

// IsTransientStatus is IsTransient for an HTTP status code (for clients that read HTTP answers
// themselves): 429, 500, 502, 503 and 504.
func IsTransientStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func isNetworkError(err error) bool {
	if isTimeout(err) || utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) && (dns.IsTimeout || dns.IsTemporary)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Again marks err as worth another try although IsTransient would say no, because the caller
// knows more: a kind whose CRD was Established a moment ago that discovery does not list yet, a
// conflict on a request that carries nothing read before. Retry returns err itself, unmarked.
// Again(nil) is nil.
func Again(err error) error {
	if err == nil {
		return nil
	}
	return again{err}
}

type again struct{ err error }

func (a again) Error() string { return a.err.Error() }
func (a again) Unwrap() error { return a.err }

// Backoff is capctl's one policy for the pauses between retries: Initial before the first retry,
// each next pause Factor times longer, none longer than Max. Attempts bounds the calls (the first
// one included) and Budget the time from the first call to the end of the last pause; zero means
// no bound (set at least one).
type Backoff struct {
	Initial  time.Duration
	Factor   float64
	Max      time.Duration
	Attempts int
	Budget   time.Duration
}

// DefaultBackoff is the policy for requests to an API server: 200 ms, then 1.5 times longer each
// time up to 2 s, for 10 s in all.
var DefaultBackoff = Backoff{Initial: 200 * time.Millisecond, Factor: 1.5, Max: 2 * time.Second, Budget: 10 * time.Second}

// Delay is the pause before retry n (1 for the first retry).
func (b Backoff) Delay(n int) time.Duration {
	d := b.Initial
	for i := 1; i < n && (b.Max <= 0 || d < b.Max); i++ {
		d = time.Duration(float64(d) * max(b.Factor, 1))
	}
	if b.Max > 0 {
		d = min(d, b.Max)
	}
	return d
}

// Retry calls fn until it succeeds or fails for good, and returns its last error: one that is not
// transient (IsTransient, or marked with Again), the attempts or the budget of b used up, or ctx
// done. A request that timed out is retried at least twice whatever the budget: a large object
// on a busy API server can take longer than one request's timeout, and that one request may have
// spent the whole budget. When ctx ends during a pause the error is ctx's, with the last one.
func Retry(ctx context.Context, b Backoff, fn func() error) error {
	start := time.Now()
	timeouts := 0
	for n := 1; ; n++ {
		err := fn()
		if err == nil {
			return nil
		}
		var a again
		marked := errors.As(err, &a)
		if marked {
			err = a.err
		}
		if ctx.Err() != nil || (!marked && !IsTransient(err)) {
			return err
		}
		timedOut := isTimeout(err)
		if timedOut {
			timeouts++
		}
		d := b.Delay(n)
		if b.Attempts > 0 && n >= b.Attempts {
			return err
		}
		if b.Budget > 0 && time.Since(start)+d > b.Budget && !(timedOut && timeouts <= 2) {
			return err
		}
		if Sleep(ctx, d) != nil {
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		}
	}
}

// CheckRead is capctl's one rule for a read that a check decides on (a rollout's soak, a move's
// settle): a read that fails transiently is tried again within DefaultBackoff; one that still
// fails, or fails for good (a permission revoked, the object gone), is returned, and the check
// must fail on it. A check that cannot read what it checks fails closed, never passes.
func CheckRead(ctx context.Context, read func(context.Context) error) error {
	return Retry(ctx, DefaultBackoff, func() error { return read(ctx) })
}
