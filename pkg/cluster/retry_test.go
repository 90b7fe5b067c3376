package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// timeoutErr is a network error that timed out (as a dial or a client's request timeout does).
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var gr = schema.GroupResource{Group: "cluster.x-k8s.io", Resource: "clusters"}

func TestIsTransient(t *testing.T) {
	dial := func(errno syscall.Errno) error {
		return &url.Error{Op: "Get", URL: "https://api:6443", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno)}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"409 conflict on an update", apierrors.NewConflict(gr, "c1", errors.New("the object has been modified")), false},
		{"409 wrapped", fmt.Errorf("updating: %w", apierrors.NewConflict(gr, "c1", errors.New("modified"))), false},
		{"429 too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"500 internal error", apierrors.NewInternalError(errors.New("etcdserver: leader changed")), true},
		{"500 server timeout", apierrors.NewServerTimeout(gr, "create", 2), true},
		{"502 bad gateway", apierrors.NewGenericServerResponse(502, "get", gr, "c1", "", 0, false), true},
		{"503 unavailable", apierrors.NewServiceUnavailable("starting"), true},
		{"504 gateway timeout", apierrors.NewTimeoutError("took too long", 1), true},
		{"501 not implemented", apierrors.NewGenericServerResponse(501, "get", gr, "c1", "", 0, false), false},
		{"404 not found", apierrors.NewNotFound(gr, "c1"), false},
		{"403 forbidden", apierrors.NewForbidden(gr, "c1", errors.New("no")), false},
		{"400 bad request", apierrors.NewBadRequest("bad"), false},
		{"422 invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Cluster"}, "c1", nil), false},
		{"connection refused", dial(syscall.ECONNREFUSED), true},
		{"connection reset", dial(syscall.ECONNRESET), true},
		{"EOF", &url.Error{Op: "Get", URL: "https://api:6443", Err: io.EOF}, true},
		{"unexpected EOF", fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF), true},
		{"request timeout", &url.Error{Op: "Get", URL: "https://api:6443", Err: timeoutErr{}}, true},
		{"DNS temporary failure", &net.DNSError{Err: "server misbehaving", Name: "api", IsTemporary: true}, true},
		{"DNS no such host", &net.DNSError{Err: "no such host", Name: "api", IsNotFound: true}, false},
		{"context cancelled", context.Canceled, false},
		{"context cancelled, wrapped", &url.Error{Op: "Get", URL: "https://api:6443", Err: context.Canceled}, false},
		{"plain error", errors.New("x509: certificate signed by unknown authority"), false},
	} {
		if got := IsTransient(tc.err); got != tc.want {
			t.Errorf("%s: IsTransient(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestIsTransientStatus(t *testing.T) {
	for code, want := range map[int]bool{200: false, 400: false, 404: false, 409: false, 429: true, 500: true, 501: false, 502: true, 503: true, 504: true} {
		if got := IsTransientStatus(code); got != want {
			t.Errorf("IsTransientStatus(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		b    Backoff
		want []time.Duration
	}{
		{DefaultBackoff, []time.Duration{200 * ms, 300 * ms, 450 * ms, 675 * ms, 1012500 * time.Microsecond, 1518750 * time.Microsecond, 2 * time.Second, 2 * time.Second}},
		{Backoff{Initial: time.Second, Factor: 2}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}},
		{Backoff{Initial: 10 * ms}, []time.Duration{10 * ms, 10 * ms, 10 * ms}},
	} {
		for i, want := range tc.want {
			if got := tc.b.Delay(i + 1); got != want {
				t.Errorf("%+v: Delay(%d) = %v, want %v", tc.b, i+1, got, want)
			}
		}
	}
}

// fast is a policy for tests: pauses of 1 ms.
var fast = Backoff{Initial: time.Millisecond, Factor: 1, Attempts: 5}

// calls returns fn that answers errs in turn (nil after the last) and counts its calls.
func calls(errs ...error) (func() error, *int) {
	n := 0
	return func() error {
		n++
		if n <= len(errs) {
			return errs[n-1]
		}
		return nil
	}, &n
}

func TestRetryRetriesTransientErrors(t *testing.T) {
	fn, n := calls(apierrors.NewTooManyRequests("slow down", 1), apierrors.NewServiceUnavailable("starting"),
		&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	if err := Retry(context.Background(), fast, fn); err != nil || *n != 4 {
		t.Errorf("429, 503, refused, then success: err %v after %d calls, want nil after 4", err, *n)
	}
}

func TestRetryReturnsConflictAtOnceUnlessMarked(t *testing.T) {
	conflict := apierrors.NewConflict(gr, "c1", errors.New("the object has been modified"))
	fn, n := calls(conflict)
	if err := Retry(context.Background(), fast, fn); !apierrors.IsConflict(err) || *n != 1 {
		t.Errorf("409: err %v after %d calls, want the conflict after 1", err, *n)
	}
	// A caller whose request carries nothing read before marks the conflict: retried, and the
	// error it ends with is the conflict itself, not the mark.
	fn, n = calls(Again(conflict), Again(conflict))
	if err := Retry(context.Background(), fast, fn); err != nil || *n != 3 {
		t.Errorf("409 marked with Again: err %v after %d calls, want nil after 3", err, *n)
	}
	fn, n = calls(Again(conflict), Again(conflict), Again(conflict), Again(conflict), Again(conflict), Again(conflict))
	err := Retry(context.Background(), fast, fn)
	var a again
	if *n != 5 || !apierrors.IsConflict(err) || errors.As(err, &a) {
		t.Errorf("409 marked, attempts used up: err %v (%T) after %d calls, want the bare conflict after 5", err, err, *n)
	}
	if Again(nil) != nil {
		t.Error("Again(nil) is not nil")
	}
}

func TestRetryStopsOnPermanentErrors(t *testing.T) {
	for _, e := range []error{apierrors.NewNotFound(gr, "c1"), apierrors.NewForbidden(gr, "c1", errors.New("no")), errors.New("x509: unknown authority")} {
		fn, n := calls(e, e)
		if err := Retry(context.Background(), fast, fn); err != e || *n != 1 {
			t.Errorf("%v: err %v after %d calls, want it after 1", e, err, *n)
		}
	}
}

func TestRetryBounds(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("starting")
	always := func(n *int, e error) func() error { return func() error { *n++; return e } }
	n := 0
	if err := Retry(context.Background(), Backoff{Initial: time.Millisecond, Attempts: 3}, always(&n, unavailable)); err != unavailable || n != 3 {
		t.Errorf("3 attempts: err %v after %d calls", err, n)
	}
	// A budget of 50 ms with pauses of 20 ms: the calls at 0, 20 and 40 ms; the next pause would end after it.
	n = 0
	start := time.Now()
	err := Retry(context.Background(), Backoff{Initial: 20 * time.Millisecond, Budget: 50 * time.Millisecond}, always(&n, unavailable))
	if err != unavailable || n < 2 || n > 3 || time.Since(start) > time.Second {
		t.Errorf("50 ms budget: err %v after %d calls in %s", err, n, time.Since(start))
	}
	// A request that timed out is retried twice even when the budget is spent.
	n = 0
	if err := Retry(context.Background(), Backoff{Initial: time.Millisecond, Budget: time.Nanosecond}, always(&n, timeoutErr{})); n != 3 || !errors.Is(err, timeoutErr{}) {
		t.Errorf("timeouts past the budget: err %v after %d calls, want 3", err, n)
	}
}

func TestRetryEndsWithTheContext(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("starting")
	// Cancelled before: one call, its error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fn, n := calls(unavailable, unavailable)
	if err := Retry(ctx, fast, fn); err != unavailable || *n != 1 {
		t.Errorf("cancelled context: err %v after %d calls, want the 503 after 1", err, *n)
	}
	// Cancelled during a long pause: Retry returns at once with the context's error and the last one.
	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	fn, n = calls(unavailable, unavailable)
	err := Retry(ctx, Backoff{Initial: time.Hour, Attempts: 3}, fn)
	if !errors.Is(err, context.Canceled) || !apierrors.IsServiceUnavailable(err) || *n != 1 || time.Since(start) > 10*time.Second {
		t.Errorf("cancelled during the pause: err %v after %d calls in %s", err, *n, time.Since(start))
	}
	// The caller's deadline passed: a request's DeadlineExceeded is not retried then.
	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	fn, n = calls(context.DeadlineExceeded, context.DeadlineExceeded)
	if err := Retry(ctx, fast, fn); !errors.Is(err, context.DeadlineExceeded) || *n != 1 {
		t.Errorf("deadline passed: err %v after %d calls, want 1", err, *n)
	}
}
