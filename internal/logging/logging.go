// Package logging writes clusterctl-style progress lines (`message key="value" ...`) to stderr at
// a chosen verbosity, redacting values whose key names a secret.
package logging

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/capctl/capctl/internal/redact"
)

// Logger prints lines at or below its verbosity. The zero value discards everything.
type Logger struct {
	mu        *sync.Mutex
	w         io.Writer
	verbosity int
	level     int
}

// New returns a logger writing to w that shows messages up to verbosity.
func New(w io.Writer, verbosity int) *Logger {
	return &Logger{mu: &sync.Mutex{}, w: w, verbosity: verbosity}
}

// Discard is a logger that prints nothing.
func Discard() *Logger { return New(io.Discard, -1) }

// V returns a logger whose messages show only at verbosity >= level.
func (l *Logger) V(level int) *Logger {
	if l == nil {
		return nil
	}
	c := *l
	c.level = level
	return &c
}

// Enabled reports whether this logger's messages are shown.
func (l *Logger) Enabled() bool { return l != nil && l.w != nil && l.level <= l.verbosity }

// Info prints msg followed by key/value pairs; values are JSON-encoded as clusterctl does.
func (l *Logger) Info(msg string, kv ...any) {
	if !l.Enabled() {
		return
	}
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i+1 < len(kv); i += 2 {
		key := fmt.Sprint(kv[i])
		val := kv[i+1]
		if redact.IsSensitive(key) {
			val = redact.Mask
		}
		enc, err := json.Marshal(val)
		if err != nil {
			enc = []byte(fmt.Sprintf("%q", fmt.Sprint(val)))
		}
		fmt.Fprintf(&b, " %s=%s", key, enc)
	}
	b.WriteByte('\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = io.WriteString(l.w, b.String())
}
