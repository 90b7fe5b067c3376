package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
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
