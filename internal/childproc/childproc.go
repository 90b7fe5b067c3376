package childproc

import (
	"errors"
	"os/exec"
	"time"
)

// Grace is how long Run waits, after the command exited or was cancelled, for output that a
// process it left behind still holds open, before that output is closed.
const Grace = 2 * time.Second

// ErrLeftChildren is Run's answer when the command exited successfully but processes it started
// in the background still held its output: they were ended.
var ErrLeftChildren = errors.New("the command left processes running in the background; they were ended")

// Run runs cmd (built with exec.CommandContext) in a process group of its own. When the context
// ends, the whole group is killed, not only the command; when the command exits, whatever it left
// running in its group is killed too. It returns cmd.Run's error, or ErrLeftChildren when the
// command succeeded but left children holding its output.
func Run(cmd *exec.Cmd) error {
	ownGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = Grace
	err := cmd.Run()
	// The command has exited: end whatever it started and left behind.
	_ = killGroup(cmd)
	if errors.Is(err, exec.ErrWaitDelay) {
		return ErrLeftChildren
	}
	return err
}
