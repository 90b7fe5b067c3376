//go:build unix

package childproc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive tells whether the pid written to file still runs.
func alive(t *testing.T, file string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the command did not write its child's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return syscall.Kill(pid, 0) == nil
}

// TestBackgroundChildDoesNotHold: a command that leaves a child in the background holding its
// output returns within the grace, and the child is ended.
func TestBackgroundChildDoesNotHold(t *testing.T) {
	pid := filepath.Join(t.TempDir(), "pid")
	var out bytes.Buffer
	cmd := exec.CommandContext(context.Background(), "/bin/sh", "-c", "sleep 300 & echo $! > "+pid+"; echo gate ok")
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := Run(cmd)
	if !errors.Is(err, ErrLeftChildren) || !strings.Contains(out.String(), "gate ok") {
		t.Fatalf("err = %v, output %q", err, out.String())
	}
	if d := time.Since(start); d > Grace+10*time.Second {
		t.Errorf("Run took %s", d)
	}
	waitGone(t, pid)
}

// TestCancelEndsTheGroup: cancelling the context (Ctrl-C) ends the command and its children,
// even a shell that ignores SIGINT and SIGTERM.
func TestCancelEndsTheGroup(t *testing.T) {
	pid := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", "trap '' INT TERM; sleep 300 & echo $! > "+pid+"; wait")
	var out bytes.Buffer
	cmd.Stdout = &out
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	if err := Run(cmd); err == nil {
		t.Fatal("a cancelled command reported success")
	}
	if d := time.Since(start); d > Grace+10*time.Second {
		t.Errorf("Run took %s after the cancel", d)
	}
	waitGone(t, pid)
}

// TestExitStatusKept: a command's own failure is returned as it is.
func TestExitStatusKept(t *testing.T) {
	err := Run(exec.CommandContext(context.Background(), "/bin/sh", "-c", "exit 3"))
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("err = %v", err)
	}
}

func waitGone(t *testing.T, pid string) {
	t.Helper()
	for range 50 {
		if !alive(t, pid) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Error("the background child is still running")
}
