// Package iostreams carries the standard streams of one command run, with terminal and colour
// detection in a single place, so commands can be run in-process by tests with plain buffers.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the streams a command reads and writes. Results go to Out, progress and logs to
// ErrOut, so `capctl generate cluster ... | kubectl apply -f -` works.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	inTTY, outTTY, errTTY bool
	colorOverride         *bool
}

// System returns the process's own streams.
func System() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		inTTY:  isTerminal(os.Stdin),
		outTTY: isTerminal(os.Stdout),
		errTTY: isTerminal(os.Stderr),
	}
}

// Test returns streams backed by buffers (stdin, stdout, stderr), none of them a terminal.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// SetTTY marks the streams as terminals or not (tests use it to exercise prompts and colour).
func (s *IOStreams) SetTTY(in, out, err bool) { s.inTTY, s.outTTY, s.errTTY = in, out, err }

// IsStdinTTY tells whether a person can answer a prompt.
func (s *IOStreams) IsStdinTTY() bool { return s.inTTY }

// IsStdoutTTY tells whether results are read by a person rather than a program.
func (s *IOStreams) IsStdoutTTY() bool { return s.outTTY }

// IsStderrTTY tells whether progress output can redraw lines.
func (s *IOStreams) IsStderrTTY() bool { return s.errTTY }

// ForceColor overrides colour detection (the --color flag).
func (s *IOStreams) ForceColor(on bool) { s.colorOverride = &on }

// ColorEnabled reports whether output to stdout may use ANSI colour: an explicit --color wins,
// then NO_COLOR (any value, per no-color.org) turns it off, else only when stdout is a terminal.
func (s *IOStreams) ColorEnabled() bool {
	if s.colorOverride != nil {
		return *s.colorOverride
	}
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	if os.Getenv("TERM") == "dumb" {
		return false
	}
	return s.outTTY
}

// CanRedrawStderr reports whether progress may redraw a line on stderr (\r, spinners): stderr
// is a terminal that is not TERM=dumb.
func (s *IOStreams) CanRedrawStderr() bool { return s.errTTY && os.Getenv("TERM") != "dumb" }

// ColorEnabledStderr is ColorEnabled for stderr, where progress and warnings go.
func (s *IOStreams) ColorEnabledStderr() bool {
	if s.colorOverride != nil {
		return *s.colorOverride
	}
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	return s.CanRedrawStderr()
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
