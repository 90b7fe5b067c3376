//go:build unix

package plugin

import (
	"fmt"
	"os"
	"syscall"
)

// Exec replaces the capctl process by p, as kubectl does on Unix: the plugin gets capctl's
// process id, streams, environment and signals, and its exit code is capctl's. It returns only
// when the exec fails.
func Exec(p Plugin, args []string) error {
	argv := append([]string{p.Path}, args...)
	if err := syscall.Exec(p.Path, argv, os.Environ()); err != nil {
		return fmt.Errorf("running plugin %s: %w", p.Path, err)
	}
	return nil
}
