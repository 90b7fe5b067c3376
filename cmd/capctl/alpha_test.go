package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/rollout"
)

func TestRolloutOptions(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    RolloutOptions
		wantErr string
	}{
		{args: []string{"restart", "machinedeployment/md-0", "-n", "team-a"},
			want: RolloutOptions{Request: rollout.Request{Action: rollout.Restart, Resources: []string{"machinedeployment/md-0"}, Namespace: "team-a"}, Output: output.Text}},
		{args: []string{"pause", "--all", "--cluster", "prod-1", "--dry-run", "-o", "json"},
			want: RolloutOptions{Request: rollout.Request{Action: rollout.Pause, All: true, Cluster: "prod-1", DryRun: true}, Output: output.JSON}},
		{args: []string{"resume", "-l", "tier=web"},
			want: RolloutOptions{Request: rollout.Request{Action: rollout.Resume, Selector: "tier=web"}, Output: output.Text}},
		{args: []string{"restart"}, wantErr: "required resource not specified"},
		{args: []string{"restart", "md-0"}, wantErr: "arguments must be in resource/name format"},
		{args: []string{"restart", "md/x", "-o", "table"}, wantErr: `invalid output format "table"`},
		{args: []string{"pause", "--cluster", "c", "md/x"}, wantErr: "--cluster limits --all or --selector"},
	} {
		var got *RolloutOptions
		action := rollout.Action(tc.args[0])
		err := executeCmd(func(f *factory) *cobra.Command {
			return newCmdRollout(f, action, func(o *RolloutOptions) error { got = o; return nil })
		}, tc.args[1:]...)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		got.IO = nil
		if strings.Join(got.Resources, ",") != strings.Join(tc.want.Resources, ",") || got.Action != tc.want.Action || got.Namespace != tc.want.Namespace ||
			got.All != tc.want.All || got.Cluster != tc.want.Cluster || got.Selector != tc.want.Selector || got.DryRun != tc.want.DryRun || got.Output != tc.want.Output {
			t.Errorf("%v: options %+v, want %+v", tc.args, *got, tc.want)
		}
	}
}

// TestRolloutRestartAllClusters: --all-clusters makes the one fleet rotation request (the fleet
// upgrade's engine and rollout flags), -n and -l then pick Clusters, and the flags of a rotation
// are refused without it.
func TestRolloutRestartAllClusters(t *testing.T) {
	parse := func(args ...string) (*RolloutOptions, error) {
		var got *RolloutOptions
		err := executeCmd(func(f *factory) *cobra.Command {
			return newCmdRollout(f, rollout.Restart, func(o *RolloutOptions) error { got = o; return nil })
		}, args...)
		return got, err
	}
	o, err := parse("--all-clusters", "-n", "prod", "-l", "tier=web", "--canary", "1", "--max-parallel", "50%", "--soak", "30s",
		"--gate-command", "true", "--rollout-after", "2026-12-07T10:00:00+01:00", "--dry-run", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	f := o.Fleet
	if f == nil || f.Rotation == nil || f.KubernetesVersion != "" {
		t.Fatalf("no rotation request: %+v", o)
	}
	if got := f.Rotation.After.Format(time.RFC3339); got != "2026-12-07T09:00:00Z" {
		t.Errorf("rollout.after %s, want the time in UTC, 2026-12-07T09:00:00Z", got)
	}
	if f.Selection.Namespace != "prod" || f.Selection.Selector != "tier=web" || !f.DryRun || f.Rollout.Canary != 1 || f.Rollout.MaxParallelPercent != 50 ||
		f.Rollout.GateCommand != "true" || time.Duration(f.Rollout.Soak) != 30*time.Second || f.Timeout != fleetupgrade.DefaultClusterTimeout {
		t.Errorf("request %+v", *f)
	}
	if o, err = parse("--all-clusters"); err != nil || o.Fleet.Rotation.After.IsZero() || time.Since(o.Fleet.Rotation.After) > time.Minute {
		t.Errorf("without --rollout-after the rotation is at now: %v, %+v", err, o)
	}
	for args, want := range map[string]string{
		"--all-clusters md/x":                                 "name no resources",
		"--all-clusters --all":                                "[all all-clusters] were all set",
		"--all-clusters --cluster c":                          "[all-clusters cluster] were all set",
		"--all-clusters --rollout-after yesterday":            "not an RFC 3339 time",
		"--all-clusters --rollout-after 2999-01-01T00:00:00Z": "is in the future",
		"md/x --canary 1":                                     "--canary shapes the fleet rotation",
		"md/x --rollout-after 2026-12-07T09:00:00Z":           "--rollout-after shapes the fleet rotation",
	} {
		if _, err := parse(strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", args, err, want)
		}
	}
}
