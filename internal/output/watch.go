package output

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"
)

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\x1b[H\x1b[2J"

// Watch (`describe cluster --watch`) calls frame every interval and writes its output whenever it differs from the last one
// written, until ctx ends (ctrl-c). On a terminal (clear) each frame replaces the previous one;
// otherwise frames are appended, separated by a blank line. An error before the first frame ends
// the watch; a later one (an API server restarting, a timeout) is shown as the frame and the
// watch goes on. ctx ending is a normal stop.
func Watch(ctx context.Context, interval time.Duration, w io.Writer, clear bool, frame func(context.Context) ([]byte, error)) error {
	if interval <= 0 {
		return fmt.Errorf("a watch interval must be positive, not %s", interval)
	}
	var last []byte
	first := true
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		out, err := frame(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if first {
				return err
			}
			out = []byte(fmt.Sprintf("Error: %v (retrying every %s)\n", err, interval))
		}
		if first || !bytes.Equal(out, last) {
			switch {
			case clear:
				_, _ = io.WriteString(w, clearScreen)
			case !first:
				_, _ = io.WriteString(w, "\n")
			}
			if _, err := w.Write(out); err != nil {
				return err
			}
			last, first = out, false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
