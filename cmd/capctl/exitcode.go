package main

import (
	"fmt"

	"github.com/capctl/capctl/pkg/multicluster"
)

// The exit codes beyond 0 and 1 (README: exit codes) reach run through exitCodeError: a command
// that printed its view returns one to end with that code, without a further error message.

// exitCodeError ends the run with a given exit code and no "Error:" line: the output already
// said what is wrong.
type exitCodeError struct{ code int }

func (e exitCodeError) Error() string { return fmt.Sprintf("exit code %d", e.code) }

// exitCode ends the run with code (multicluster's codes) once the view is printed; nil for ExitOK.
func exitCode(code int) error {
	if code != multicluster.ExitOK {
		return exitCodeError{code: code}
	}
	return nil
}
