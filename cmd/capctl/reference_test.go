package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/testing/testenv"
)

// The command reference under docs/ is generated from the cobra commands, so --help is its one
// source: `make docs` runs this test with -update to write it; without -update the test fails
// when the committed files differ from what the commands say.
var updateReference = flag.Bool("update", false, "rewrite docs/reference and docs/man from the commands")

// referenceDate is the date man pages carry in their header. It is fixed so that generating the
// reference twice gives the same bytes (cobra would put today's month); the version a page
// describes is the release archive it ships in.
var referenceDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

// referenceRoot is the command tree as a user sees it. Help texts that name this machine's
// folders (the download cache) name the usual ones instead, so the reference is the same
// wherever it is generated.
func referenceRoot(t *testing.T) *cobra.Command {
	t.Setenv("HOME", "~")
	t.Setenv("XDG_CACHE_HOME", "~/.cache")
	t.Setenv("XDG_CONFIG_HOME", "~/.config")
	io, _, _, _ := iostreams.Test()
	root := newRootCmd(newFactory(io))
	root.DisableAutoGenTag = true
	root.InitDefaultHelpCmd()
	return root
}

// writeReference writes the Markdown reference (one capctl_*.md per command) into md and the man
// pages (one capctl*.1 per command) into man, replacing what was generated there before.
func writeReference(root *cobra.Command, md, man string) error {
	for dir, glob := range map[string]string{md: "capctl*.md", man: "capctl*.1"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		old, _ := filepath.Glob(filepath.Join(dir, glob))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	// Links between pages stay relative, so the reference reads on GitHub and in a checkout alike.
	if err := doc.GenMarkdownTreeCustom(root, md, func(string) string { return "" }, func(s string) string { return s }); err != nil {
		return fmt.Errorf("markdown reference: %w", err)
	}
	header := &doc.GenManHeader{Title: "CAPCTL", Section: "1", Source: "capctl", Manual: "capctl Manual", Date: &referenceDate}
	if err := doc.GenManTree(root, header, man); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}

func TestCommandReferenceIsCurrent(t *testing.T) {
	repo := testenv.RepoRoot()
	md, man := filepath.Join(repo, "docs", "reference"), filepath.Join(repo, "docs", "man")
	if *updateReference {
		if err := writeReference(referenceRoot(t), md, man); err != nil {
			t.Fatal(err)
		}
		return
	}
	tmp := t.TempDir()
	if err := writeReference(referenceRoot(t), filepath.Join(tmp, "reference"), filepath.Join(tmp, "man")); err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, pair := range [][2]string{{filepath.Join(tmp, "reference"), md}, {filepath.Join(tmp, "man"), man}} {
		stale = append(stale, diffDirs(t, pair[0], pair[1])...)
	}
	if len(stale) > 0 {
		t.Fatalf("the command reference in docs/ is stale (%s); regenerate it with `make docs` and commit the result", strings.Join(stale, ", "))
	}
}

// TestReferenceCoversEveryCommandAndFlag checks the generator itself: every available command
// has a page, and every one of its flags appears on that page.
func TestReferenceCoversEveryCommandAndFlag(t *testing.T) {
	tmp := t.TempDir()
	root := referenceRoot(t)
	if err := writeReference(root, filepath.Join(tmp, "md"), filepath.Join(tmp, "man")); err != nil {
		t.Fatal(err)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.IsAvailableCommand() && c != root {
			return
		}
		base := strings.ReplaceAll(c.CommandPath(), " ", "_")
		page, err := os.ReadFile(filepath.Join(tmp, "md", base+".md"))
		if err != nil {
			t.Errorf("no reference page for %q: %v", c.CommandPath(), err)
			return
		}
		if _, err := os.Stat(filepath.Join(tmp, "man", strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")); err != nil {
			t.Errorf("no man page for %q: %v", c.CommandPath(), err)
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !bytes.Contains(page, []byte("--"+f.Name)) {
				t.Errorf("%s.md does not mention --%s", base, f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// diffDirs names the files that differ between the generated folder got and the committed want.
func diffDirs(t *testing.T, got, want string) []string {
	t.Helper()
	names := func(dir string) map[string][]byte {
		m := map[string][]byte{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				m[e.Name()] = b
			}
		}
		return m
	}
	g, w := names(got), names(want)
	var diff []string
	for n, b := range g {
		if wb, ok := w[n]; !ok {
			diff = append(diff, filepath.Base(want)+"/"+n+" missing")
		} else if !bytes.Equal(b, wb) {
			diff = append(diff, filepath.Base(want)+"/"+n+" differs")
		}
	}
	for n := range w {
		if _, ok := g[n]; !ok {
			diff = append(diff, filepath.Base(want)+"/"+n+" no longer generated")
		}
	}
	sort.Strings(diff)
	return diff
}
