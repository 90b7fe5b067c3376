//go:build windows

package lease

import "os"

// processExists tells whether a process of this host has the pid: on Windows FindProcess opens
// the process, and fails when there is none.
func processExists(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
