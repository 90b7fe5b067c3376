// Package output is the one output layer of capctl's commands, so that every command looks and
// behaves the same: the -o/--output vocabulary (default text everywhere), the structured writer
// behind -o json|yaml, the one table style, the writer for files that may hold secrets, and the
// progress helper. It imports no command-line library: feature packages render through it, and
// only cmd/capctl turns Format into the -o flag (its formatflag.go).
//
//   - Format: text, json and yaml (Common), plus version's short.
//   - WriteStructured / Render: one JSON (two-space indent) or YAML document on stdout.
//   - Table: kubectl's borderless table (no boxes, three spaces between columns).
//   - WritePrivateFile: files that may hold secrets (kubeconfigs, components with credentials,
//     templates, move backups) are 0600 before the first byte and replaced atomically.
//   - Progress: counts and spinners on stderr, redrawn only on a terminal, colour only where
//     NO_COLOR and the terminal allow it.
package output
