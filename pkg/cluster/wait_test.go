package cluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	ctx := context.Background()
	n := 0
	err := Poll(ctx, time.Millisecond, time.Second, func(context.Context) (bool, error) { n++; return n == 3, nil })
	if err != nil || n != 3 {
		t.Errorf("done on the third check: err %v after %d checks", err, n)
	}
	boom := errors.New("boom")
	if err := Poll(ctx, time.Millisecond, time.Second, func(context.Context) (bool, error) { return false, boom }); err != boom {
		t.Errorf("a failing check: err %v, want it", err)
	}
	start := time.Now()
	n = 0
	err = Poll(ctx, 10*time.Millisecond, 55*time.Millisecond, func(context.Context) (bool, error) { n++; return false, nil })
	if !errors.Is(err, ErrTimedOut) || n < 2 || n > 6 || time.Since(start) > 5*time.Second {
		t.Errorf("never done: err %v after %d checks in %s, want ErrTimedOut", err, n, time.Since(start))
	}
	// A check never starts that the deadline would cut short: an interval longer than the
	// timeout checks once.
	n = 0
	if err := Poll(ctx, time.Hour, time.Millisecond, func(context.Context) (bool, error) { n++; return false, nil }); !errors.Is(err, ErrTimedOut) || n != 1 {
		t.Errorf("interval > timeout: err %v after %d checks, want ErrTimedOut after 1", err, n)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if err := Poll(cctx, time.Millisecond, time.Hour, func(context.Context) (bool, error) { return false, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err %v, want context.Canceled", err)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) > 10*time.Second {
		t.Errorf("cancelled Sleep: err %v after %s", err, time.Since(start))
	}
}
