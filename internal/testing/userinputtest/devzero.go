package userinputtest

import (
	"os"
	"path/filepath"
	"testing"
)

// DevZeroAt makes path (its folder created, a file there replaced) a symbolic link to /dev/zero: a file that never ends and reports size 0,
// where a reader of user files expects a regular one. Where there is no /dev/zero the test is
// skipped, saying so.
func DevZeroAt(tb testing.TB, path string) {
	tb.Helper()
	if _, err := os.Stat("/dev/zero"); err != nil {
		tb.Skipf("no /dev/zero on this system (%v): the endless file cannot be made", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", path); err != nil {
		tb.Fatal(err)
	}
}
