//go:build !windows

package lease

import (
	"errors"
	"syscall"
)

// processExists tells whether a process of this host has the pid: signal 0 checks without
// sending anything (EPERM: it exists, owned by another user).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
