package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
)

func parseFormatFlag(t *testing.T, extra []output.Format, args ...string) (output.Format, error) {
	t.Helper()
	var f output.Format
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	addFormatFlag(cmd, &f, "", extra...)
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	return f, err
}

func TestFormatFlagOneVocabularyDefaultText(t *testing.T) {
	for args, want := range map[string]output.Format{"": output.Text, "-o text": output.Text, "-o json": output.JSON, "--output=yaml": output.YAML, "-o YAML": output.YAML} {
		got, err := parseFormatFlag(t, nil, strings.Fields(args)...)
		if err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", args, got, err, want)
		}
	}
	for _, bad := range []string{"table", "xml", "short", "wide"} {
		_, err := parseFormatFlag(t, nil, "-o", bad)
		if err == nil || !strings.Contains(err.Error(), `invalid output format "`+bad+`": use one of text, json, yaml`) {
			t.Errorf("-o %s: %v", bad, err)
		}
	}
	if got, err := parseFormatFlag(t, []output.Format{output.Short}, "-o", "short"); err != nil || got != output.Short {
		t.Errorf("extra short: %q %v", got, err)
	}
}
