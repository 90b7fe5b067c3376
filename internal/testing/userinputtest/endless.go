// Package userinputtest holds the inputs tests use to check that readers of user input are
// bounded.
package userinputtest

// Endless is a reader that never ends, like an endless pipe: every read fills the buffer with '#'
// (a YAML comment, so a reader cannot stop early on a syntax error).
type Endless struct{}

func (Endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '#'
	}
	return len(p), nil
}
