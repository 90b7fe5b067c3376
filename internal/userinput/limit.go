// Package userinput is the one home of the rules for what capctl reads from users: the bound on
// files and standard input (YAML to convert or render, --values files, backups, local repository
// files) and the strict YAML reading that refuses duplicate keys.
//
// A reader that trusted the size a file reports would read /dev/zero or an endless pipe until the
// process ran out of memory; these readers count the bytes they actually get and stop one byte
// past the limit.
package userinput

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultMax is the default bound of one input (file, stdin, URL body): YAML is text, and the
// largest provider components file known (about 10 MiB) fits several times.
const DefaultMax int64 = 64 << 20

// Flag is the global flag that raises the bound.
const Flag = "--max-input-size"

var maxBytes atomic.Int64

func init() { maxBytes.Store(DefaultMax) }

// Max is the current bound of one input, in bytes.
func Max() int64 { return maxBytes.Load() }

// SetMax changes the bound (the --max-input-size flag); n <= 0 restores the default. It returns
// the previous bound, so tests can put it back.
func SetMax(n int64) int64 {
	if n <= 0 {
		n = DefaultMax
	}
	return maxBytes.Swap(n)
}

// Value is the --max-input-size flag: a byte count or a Kubernetes quantity (64Mi, 1Gi).
type Value struct{}

func (Value) String() string { return resource.NewQuantity(Max(), resource.BinarySI).String() }
func (Value) Type() string   { return "size" }

// Set parses a size such as 128Mi or 200000000.
func (Value) Set(s string) error {
	n, err := ParseSize(s)
	if err != nil {
		return err
	}
	SetMax(n)
	return nil
}

// ParseSize reads a positive byte count written as a number or a quantity (64Mi, 1Gi, 500M).
func ParseSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: write bytes or a quantity such as 64Mi or 1Gi", s)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive size in bytes", s)
	}
	return n, nil
}

// TooLargeError is an input larger than its bound.
type TooLargeError struct {
	// Name is the input (a path, "standard input", a URL).
	Name string
	// Limit is the bound in bytes; Flag raises it.
	Limit int64
	Flag  string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %s (the limit of one input): it is not read further; raise the limit with %s if the input is genuine",
		e.Name, Human(e.Limit), e.Flag)
}

// Human writes a byte count as a binary quantity (64Mi).
func Human(n int64) string { return resource.NewQuantity(n, resource.BinarySI).String() }

// ReadAll reads r up to the current bound (Max, raised by --max-input-size). It stops as soon as
// one byte more arrives, so an endless stream costs at most the bound in memory, and it stops
// between reads when ctx is cancelled (SIGINT/SIGTERM).
func ReadAll(ctx context.Context, r io.Reader, name string) ([]byte, error) {
	return ReadAllLimit(ctx, r, name, Max(), Flag)
}

// ReadAllLimit is ReadAll with an explicit bound and the flag that raises it.
func ReadAllLimit(ctx context.Context, r io.Reader, name string, limit int64, flag string) ([]byte, error) {
	return readLimit(ctx, r, name, limit, flag, 0)
}

// readLimit reads r up to limit; sizeHint (a regular file's size, or 0) sizes the buffer once,
// so a large file is not copied through a doubling buffer.
func readLimit(ctx context.Context, r io.Reader, name string, limit int64, flag string, sizeHint int64) ([]byte, error) {
	lr := NewLimitReader(ctx, r, name, limit, flag)
	if sizeHint > 0 && sizeHint <= limit {
		var buf bytes.Buffer
		buf.Grow(int(sizeHint) + bytes.MinRead)
		if _, err := buf.ReadFrom(lr); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	return io.ReadAll(lr)
}

// NewLimitReader reads r for a caller that decodes as it reads (a stream too large to hold at
// once): it returns what r holds up to limit bytes, then a *TooLargeError naming the input and
// flag instead of the byte past the bound, and it stops between reads when ctx is cancelled.
func NewLimitReader(ctx context.Context, r io.Reader, name string, limit int64, flag string) io.Reader {
	return &limitReader{ctx: ctx, r: r, name: name, limit: limit, flag: flag}
}

type limitReader struct {
	ctx         context.Context
	r           io.Reader
	name, flag  string
	limit, read int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if err := l.ctx.Err(); err != nil {
		return 0, fmt.Errorf("reading stopped: %w", err)
	}
	if left := l.limit + 1 - l.read; int64(len(p)) > left {
		p = p[:left] // one byte past the bound is enough to know
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	if l.read > l.limit {
		return n - int(l.read-l.limit), &TooLargeError{Name: l.name, Limit: l.limit, Flag: l.flag}
	}
	return n, err
}

// ReadFile reads the file at path within the current bound. Special files the user names on
// purpose (a FIFO from process substitution, /dev/stdin) are read like any stream, and bounded
// the same way; a directory is refused.
func ReadFile(ctx context.Context, path string) ([]byte, error) {
	return ReadFileLimit(ctx, path, Max(), Flag)
}

// ReadFileLimit is ReadFile with an explicit bound and what raises it (a flag, or the reason
// nothing does).
func ReadFileLimit(ctx context.Context, path string, limit int64, flag string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	} else if err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, &TooLargeError{Name: path, Limit: limit, Flag: flag} // known before reading
	} else if err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	return readLimit(ctx, f, path, limit, flag, size)
}

// IsTooLarge reports whether err is (or wraps) a *TooLargeError.
func IsTooLarge(err error) bool {
	var e *TooLargeError
	return errors.As(err, &e)
}
