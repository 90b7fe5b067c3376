//go:build !unix

package childproc

import (
	"errors"
	"os"
	"os/exec"
)

// Elsewhere there are no process groups to start here: the command alone is ended.
func ownGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
