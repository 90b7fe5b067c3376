package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/iostreams"
)

// outputIsAFile are commands whose -o names a file, as the same clusterctl command's does
// (`clusterctl convert -o FILE`): drop-in scripts rely on it; and `diagnose bundle -o FILE.tar.gz`,
// whose only output is the bundle (as kubectl's and crust-gather's support dumps name theirs).
var outputIsAFile = map[string]bool{"capctl convert": true, "capctl diagnose bundle": true}

// Every -o flag speaks one vocabulary with the same default: text, json, yaml.
func TestEveryOutputFlagHasOneVocabulary(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	root := newRootCmd(newFactory(io))
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		fl := c.Flags().Lookup("output")
		if fl == nil || outputIsAFile[c.CommandPath()] {
			return
		}
		seen++
		if fl.Value.Type() != "format" || fl.Shorthand != "o" || fl.DefValue != "text" {
			t.Errorf("%s: -o is %s (shorthand %q) with default %q, want the output layer's format flag defaulting to text", c.CommandPath(), fl.Value.Type(), fl.Shorthand, fl.DefValue)
			return
		}
		for _, ok := range []string{"text", "json", "yaml"} {
			if err := fl.Value.Set(ok); err != nil {
				t.Errorf("%s -o %s: %v", c.CommandPath(), ok, err)
			}
		}
		if err := fl.Value.Set("table"); err == nil || !strings.Contains(err.Error(), "use one of text, json, yaml") {
			t.Errorf("%s -o table: %v", c.CommandPath(), err)
		}
	}
	walk(root)
	if seen < 8 {
		t.Errorf("only %d commands with -o found", seen)
	}
}

// `upgrade plan -o text` was refused ("use one of table, json, yaml") while text was every other
// command's default: it now passes validation and fails only at the missing cluster.
func TestUpgradePlanAcceptsTextOutput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, args := range [][]string{
		{"upgrade", "plan", "-o", "text"},
		{"upgrade", "plan", "--kubernetes-version", "v1.33.2", "-o", "text"},
	} {
		_, errOut, code := runCapctl(t, append(args, "--kubeconfig", missing)...)
		if code == 0 || strings.Contains(errOut, "invalid output format") || strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: exit %d, stderr %s", args, code, errOut)
		}
	}
}
