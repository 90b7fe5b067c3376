package main

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
)

func TestRequireFlags(t *testing.T) {
	build := func() *cobra.Command {
		cmd := &cobra.Command{Use: "x"}
		fl := cmd.Flags()
		fl.String("version", "", "")
		fl.String("plan", "", "")
		fl.Int("wave", 0, "")
		fl.Bool("all", false, "")
		fl.StringSlice("list", nil, "")
		requireFlags(cmd, "shapes a rollout", []string{"wave"}, "version", "plan")
		requireFlags(cmd, "span clusters", []string{"all", "list"}, "version")
		return cmd
	}
	for _, tc := range []struct {
		args []string
		want string // "" accepts
	}{
		{nil, ""},
		{[]string{"--wave", "0"}, "--wave shapes a rollout: it needs --version or --plan"},
		{[]string{"--wave", "1", "--version", ""}, "--wave shapes a rollout: it needs --version or --plan"},
		{[]string{"--wave", "1", "--version", "v1"}, ""},
		{[]string{"--wave", "1", "--plan", "p.json"}, ""},
		{[]string{"--all"}, "--all and --list span clusters: they need --version"},
		{[]string{"--list", "a"}, "--all and --list span clusters: they need --version"},
		{[]string{"--all=false", "--list", ""}, ""},
		{[]string{"--all", "--version", "v1"}, ""},
	} {
		cmd := build()
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		err := checkRequiredFlags(cmd.Flags())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		case err != nil && !errors.As(err, new(usageError)):
			t.Errorf("%v: %T is not a usage error", tc.args, err)
		}
	}
}

func TestRequireFlagsPanicsOnAnUnknownFlag(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("an unknown flag was registered")
		}
	}()
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().String("a", "", "")
	requireFlags(cmd, "does", []string{"a"}, "b")
}
