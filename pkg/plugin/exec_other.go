//go:build !unix

package plugin

import "os"

// Exec runs p as a child with capctl's streams and exits with its exit code (no process
// replacement outside Unix). It returns only when the plugin cannot be started.
func Exec(p Plugin, args []string) error {
	code, err := Run(p, args, os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		return err
	}
	os.Exit(code)
	return nil
}
