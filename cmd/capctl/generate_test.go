package main

import (
	"strings"
	"testing"
)

func TestGenerateWithoutSubcommandIsUsageError(t *testing.T) {
	_, stderr, code := runCapctl(t, "generate")
	if code == 0 || !strings.Contains(stderr, "missing subcommand") || !strings.Contains(stderr, "Usage:") {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
}
