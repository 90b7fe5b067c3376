package output

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

func TestWatchFramesAndErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outputs := []string{"a\n", "a\n", "b\n", "ERR", "ERR", "c\n"}
	i := 0
	frame := func(context.Context) ([]byte, error) {
		if i >= len(outputs) {
			cancel()
			return nil, ctx.Err()
		}
		o := outputs[i]
		i++
		if o == "ERR" {
			return nil, errors.New("connection refused")
		}
		return []byte(o), nil
	}
	var buf bytes.Buffer
	if err := Watch(ctx, time.Millisecond, &buf, false, frame); err != nil {
		t.Fatal(err)
	}
	want := "a\n\nb\n\nError: connection refused (retrying every 1ms)\n\nc\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
	// An error before anything was shown ends the watch.
	err := Watch(context.Background(), time.Millisecond, &buf, true, func(context.Context) ([]byte, error) { return nil, errors.New("boom") })
	if err == nil || err.Error() != "boom" {
		t.Errorf("first-frame error: %v", err)
	}
}

func TestWatchRefusesANonPositiveInterval(t *testing.T) {
	err := Watch(context.Background(), 0, &bytes.Buffer{}, false, func(context.Context) ([]byte, error) { return nil, nil })
	if err == nil {
		t.Fatal("a zero interval was accepted")
	}
}
