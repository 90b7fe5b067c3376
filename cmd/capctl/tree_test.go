package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/cutover"
	deletion "github.com/capctl/capctl/pkg/deletion"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	clusterinit "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/move"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/rollout"
	"github.com/capctl/capctl/pkg/topology"
)

// flagCase builds one command through its newCmdX with a capturing run function, runs it with
// the case's arguments on the factory given (which cannot reach any cluster) and checks the
// captured options: the request the flags made. It returns the name of the command it built.
type flagCase func(t *testing.T, f *factory) string

// capture is the flagCase of a command built by build, run with args, checked by check.
func capture[T any](build func(*factory, func(*T) error) *cobra.Command, args []string, check func(t *testing.T, o *T)) flagCase {
	return func(t *testing.T, f *factory) string {
		t.Helper()
		o, cmd, err := parseOptionsWith(t, f, build, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		check(t, o)
		return cmd.Name()
	}
}

// rolloutCmd is newCmdRollout for one action, in the shape capture takes.
func rolloutCmd(a rollout.Action) func(*factory, func(*RolloutOptions) error) *cobra.Command {
	return func(f *factory, runF func(*RolloutOptions) error) *cobra.Command { return newCmdRollout(f, a, runF) }
}

// exemptCommands are the runnable commands without a flag→request case, each with the reason.
var exemptCommands = map[string]string{
	"capctl completion": "prints cobra's completion script for the shell named: no feature, no request, no cluster",
}

// flagCases hold, for every runnable command of the tree, one flag→request case.
var flagCases = map[string]flagCase{
	"capctl alpha rollout restart": capture(rolloutCmd(rollout.Restart), []string{"machinedeployment/md-0", "-n", "team-a", "--dry-run"}, func(t *testing.T, o *RolloutOptions) {
		want := rollout.Request{Action: rollout.Restart, Resources: []string{"machinedeployment/md-0"}, Namespace: "team-a", DryRun: true}
		if !reflect.DeepEqual(o.Request, want) || o.Output != output.Text {
			t.Errorf("request %+v, want %+v", o.Request, want)
		}
	}),
	"capctl alpha rollout pause": capture(rolloutCmd(rollout.Pause), []string{"--all", "--cluster", "prod-1", "-o", "json"}, func(t *testing.T, o *RolloutOptions) {
		if o.Action != rollout.Pause || !o.All || o.Cluster != "prod-1" || o.Output != output.JSON {
			t.Errorf("request %+v", o.Request)
		}
	}),
	"capctl alpha rollout resume": capture(rolloutCmd(rollout.Resume), []string{"-l", "tier=web"}, func(t *testing.T, o *RolloutOptions) {
		if o.Action != rollout.Resume || o.Selector != "tier=web" {
			t.Errorf("request %+v", o.Request)
		}
	}),
	"capctl auth can-i": capture(newCmdAuthCanI, []string{"move", "-n", "team-a", "--to-kubeconfig", "t.kubeconfig"}, func(t *testing.T, o *AuthCanIOptions) {
		if o.Request.Command != "move" || o.Request.Namespace != "team-a" || o.ToKubeconfig != "t.kubeconfig" || o.Request.Clusters != nil {
			t.Errorf("request %+v", o.Request)
		}
		if _, err := authz.Lookup(o.Request.Command); err != nil {
			t.Error(err)
		}
	}),
	"capctl config repositories": capture(newCmdConfigRepositories, []string{"-o", "yaml"}, func(t *testing.T, o *ConfigRepositoriesOptions) {
		if o.Output != output.YAML {
			t.Errorf("output %q", o.Output)
		}
	}),
	"capctl convert": capture(newCmdConvert, []string{"-", "-o", "out.yaml"}, func(t *testing.T, o *ConvertOptions) {
		if !reflect.DeepEqual(o.Paths, []string{"-"}) || o.Stdin != o.IO.In || o.ToVersion != "v1beta2" || o.OutputFile != "out.yaml" || o.InPlace || o.DryRun {
			t.Errorf("request %+v", o.Request)
		}
	}),
	"capctl delete": capture(newCmdDelete, []string{"-i", "docker", "--include-namespace", "--dry-run"}, func(t *testing.T, o *DeleteOptions) {
		want := []deletion.Selection{{Type: provider.InfrastructureProviderType, Name: "docker"}}
		if !reflect.DeepEqual(o.Request.Providers, want) || !o.Request.IncludeNamespace || o.Request.IncludeCRD || !o.DryRun || o.Yes {
			t.Errorf("request %+v", o.Request)
		}
	}),
	"capctl describe cluster": capture(newCmdDescribeCluster, []string{"c1", "-n", "prod", "--show-conditions", "all", "--watch", "--watch-interval", "5s"}, func(t *testing.T, o *describeClusterOptions) {
		if o.Describe.Name != "c1" || o.Describe.Namespace != "prod" || o.Describe.ShowConditions != "all" || !o.Watch || o.WatchInterval != 5*time.Second || !o.Describe.Grouping {
			t.Errorf("options %+v", o)
		}
	}),
	"capctl describe clusters": capture(newCmdDescribeClusters, []string{"-A", "--contexts", "a,b"}, func(t *testing.T, o *describeClustersOptions) {
		if !o.AllNamespaces || o.Namespace != "" || !reflect.DeepEqual(o.Contexts.Contexts, []string{"a", "b"}) {
			t.Errorf("options %+v", o)
		}
	}),
	"capctl diagnose cluster": capture(newCmdDiagnoseCluster, []string{"c1", "-n", "prod", "--workload=false"}, func(t *testing.T, o *DiagnoseClusterOptions) {
		if o.Name != "c1" || o.Namespace != "prod" || o.Workload || o.StuckAfter != diagnose.DefaultStuckAfter || o.WorkloadTimeout != diagnose.DefaultWorkloadTimeout {
			t.Errorf("request %+v", o.ClusterRequest)
		}
	}),
	"capctl diagnose clusters": capture(newCmdDiagnoseClusters, []string{"-n", "prod", "--stuck-after", "1h"}, func(t *testing.T, o *DiagnoseClustersOptions) {
		if o.Namespace != "prod" || o.StuckAfter != time.Hour || o.Concurrency != diagnose.DefaultConcurrency || !o.Workload {
			t.Errorf("request %+v", o.ClustersRequest)
		}
	}),
	"capctl diagnose bundle": capture(newCmdDiagnoseBundle, []string{"-o", "s.tar.gz", "-A", "--max-size", "64Mi", "--log-lines", "-1"}, func(t *testing.T, o *DiagnoseBundleOptions) {
		if o.Output != "s.tar.gz" || !o.AllNamespaces || o.MaxSize != 64<<20 || o.LogLines != -1 || o.Views == nil {
			t.Errorf("request %+v", o.Request)
		}
	}),
	"capctl diagnose v1beta1": capture(newCmdDiagnoseV1Beta1, []string{"-f", "classes/", "-f", "-", "--offline", "-o", "json"}, func(t *testing.T, o *DiagnoseV1Beta1Options) {
		want := cutover.Request{Files: []string{"classes/", "-"}, Stdin: o.IO.In, Offline: true}
		if !reflect.DeepEqual(o.Request, want) || o.Output != output.JSON {
			t.Errorf("request %+v, want %+v", o.Request, want)
		}
	}),
	"capctl mcp": capture(newCmdMCP, []string{"--http", "127.0.0.1:0"}, func(t *testing.T, o *MCPOptions) {
		if o.HTTP != "127.0.0.1:0" || o.Stdio != nil || o.Version == "" {
			t.Errorf("request %+v", o.Request)
		}
	}),
	"capctl topology plan": capture(newCmdTopologyPlan, []string{"-f", "classes/", "-f", "-", "-n", "prod", "--cluster", "a,b", "-l", "tier=web", "--diff", "--save", "p.json", "-o", "json"}, func(t *testing.T, o *TopologyPlanOptions) {
		want := topology.PlanRequest{Files: []string{"classes/", "-"}, Stdin: o.IO.In, Namespace: "prod", Clusters: []string{"a", "b"}, Selector: "tier=web", Diff: true, Save: "p.json", Concurrency: topology.DefaultConcurrency}
		if !reflect.DeepEqual(o.PlanRequest, want) || o.Output != output.JSON || o.Contexts.Enabled() {
			t.Errorf("request %+v, want %+v", o.PlanRequest, want)
		}
	}),
	"capctl generate cluster": capture(newCmdGenerateCluster, []string{"c1", "--from", "t.yaml", "--worker-machine-count", "2", "--kubernetes-version", "v1.34.1"}, func(t *testing.T, o *generateClusterOptions) {
		r := o.Request
		if r.Name != "c1" || r.Source.From != "t.yaml" || r.WorkerMachineCount == nil || *r.WorkerMachineCount != 2 || r.ControlPlaneMachineCount != nil || r.KubernetesVersion != "v1.34.1" {
			t.Errorf("request %+v", r)
		}
	}),
	"capctl generate provider": capture(newCmdGenerateProvider, []string{"-b", "kubeadm:v1.14.0", "--describe"}, func(t *testing.T, o *GenerateProviderOptions) {
		if o.Type != provider.BootstrapProviderType || o.Ref != (provider.Reference{Name: "kubeadm", Version: "v1.14.0"}) || !o.Describe {
			t.Errorf("options %+v", o)
		}
	}),
	"capctl generate yaml": capture(newCmdGenerateYAML, []string{"--from", "t.yaml", "--set", "A=1"}, func(t *testing.T, o *generateYAMLOptions) {
		if o.Request.From != "t.yaml" || !reflect.DeepEqual(o.Request.Values.Set, []string{"A=1"}) || o.Request.ListVariables {
			t.Errorf("request %+v", o.Request)
		}
	}),
	"capctl get kubeconfig": capture(newCmdGetKubeconfig, []string{"c1", "-n", "fleet"}, func(t *testing.T, o *GetKubeconfigOptions) {
		if o.Request.Cluster != "c1" || o.Request.Namespace != "fleet" || o.WriteTo != "" {
			t.Errorf("options %+v", o)
		}
	}),
	"capctl get providers": capture(newCmdGetProviders, []string{"--all-contexts", "-o", "json"}, func(t *testing.T, o *GetProvidersOptions) {
		if !o.Contexts.All || o.Output != output.JSON {
			t.Errorf("options %+v", o)
		}
	}),
	"capctl init": capture(newCmdInit, []string{"-i", "docker:v1.14.0", "--wait-providers=false"}, func(t *testing.T, o *InitOptions) {
		if !reflect.DeepEqual(o.Selection.Infrastructure, []string{"docker:v1.14.0"}) || o.WaitProviders || o.WaitProviderTimeout != clusterinit.DefaultWaitProviderTimeout {
			t.Errorf("request %+v", o.InitRequest)
		}
	}),
	"capctl init list-images": capture(newCmdInitListImages, []string{"-i", "docker", "-b", "-"}, func(t *testing.T, o *ListImagesOptions) {
		want := clusterinit.ImagesRequest{Selection: clusterinit.Selection{Infrastructure: []string{"docker"}, Bootstrap: []string{"-"}}}
		if !reflect.DeepEqual(o.request(), want) {
			t.Errorf("request %+v, want %+v", o.request(), want)
		}
	}),
	"capctl move": capture(newCmdMove, []string{"-n", "team-a", "--to-kubeconfig", "t.kubeconfig", "--block-move-timeout", "1m"}, func(t *testing.T, o *moveOptions) {
		r := o.request
		if r.Target == nil || r.Target.Kubeconfig != "t.kubeconfig" || r.Scope.Namespace != "team-a" || r.BlockMoveTimeout != time.Minute ||
			r.Parallelism != move.DefaultParallelism || r.Settle != move.DefaultSettle || r.DryRun {
			t.Errorf("request %+v", r)
		}
	}),
	"capctl plugin list": capture(newCmdPluginList, []string{"-o", "json"}, func(t *testing.T, o *PluginListOptions) {
		// Built alone, the command is its own root: cobra's completion words are its built-ins.
		if o.Output != output.JSON || o.Builtin == nil || !o.Builtin(cobra.ShellCompRequestCmd) || o.Builtin("no-such-plugin") {
			t.Errorf("options %+v", o)
		}
	}),
	"capctl repository cache clean": capture(newCmdRepositoryCacheClean, []string{"infrastructure-docker:v1.14.0"}, func(t *testing.T, o *RepositoryCacheCleanOptions) {
		want := &MirrorRef{Label: "infrastructure-docker", Name: "docker", Version: "v1.14.0", Type: provider.InfrastructureProviderType}
		if !reflect.DeepEqual(o.Provider, want) {
			t.Errorf("provider %+v", o.Provider)
		}
	}),
	"capctl repository mirror": capture(newCmdRepositoryMirror, []string{"--to", "mirror-dir", "cluster-api:v1.14.0", "--cert-manager=false"}, func(t *testing.T, o *MirrorOptions) {
		want := []MirrorRef{{Label: "cluster-api", Name: "cluster-api", Version: "v1.14.0", Type: provider.CoreProviderType}}
		if o.To != "mirror-dir" || !reflect.DeepEqual(o.Providers, want) || o.CertManager {
			t.Errorf("options %+v", o)
		}
	}),
	"capctl upgrade apply": capture(newCmdUpgradeApply, []string{"--contract", contract.Current, "--wait-providers", "--wait-provider-timeout", "60"}, func(t *testing.T, o *UpgradeApplyOptions) {
		if o.Request.Contract != contract.Current || !o.WaitProviders || o.WaitTimeout != time.Minute || o.Fleet != nil {
			t.Errorf("request %+v, options %+v", o.Request, o.ApplyOptions)
		}
	}),
	"capctl upgrade history": capture(newCmdUpgradeHistory, []string{"fleet-upgrade-1"}, func(t *testing.T, o *UpgradeHistoryOptions) {
		if o.Request != (fleetupgrade.HistoryRequest{Name: "fleet-upgrade-1"}) {
			t.Errorf("request %+v", o.Request)
		}
	}),
	"capctl upgrade plan": capture(newCmdUpgradePlan, []string{"--kubernetes-version", "1.35.1", "-l", "tier=gold"}, func(t *testing.T, o *UpgradePlanOptions) {
		r := o.FleetPlanRequest
		if r.KubernetesVersion != "v1.35.1" || r.Selection.Selector != "tier=gold" || r.Rollout.MaxParallel != fleetupgrade.DefaultMaxParallel {
			t.Errorf("request %+v", r)
		}
	}),
	"capctl topology apply": capture(newCmdTopologyApply, []string{"--plan", "p.json", "--canary", "1", "--max-parallel", "50%", "--class-name", "qs-v2"}, func(t *testing.T, o *TopologyApplyOptions) {
		r := o.ApplyRequest
		if r.Plan != "p.json" || r.ClassName != "qs-v2" || r.Rollout.Canary != 1 || r.Rollout.MaxParallelPercent != 50 || r.Timeout != fleetupgrade.DefaultClusterTimeout {
			t.Errorf("request %+v", r)
		}
	}),
	"capctl version": capture(newCmdVersion, []string{"-o", "short"}, func(t *testing.T, o *VersionOptions) {
		if o.Output != output.Short || o.Info.GitVersion == "" {
			t.Errorf("options %+v", o)
		}
	}),
}

// TestEveryCommandHasAFlagToRequestCase walks capctl's whole command tree: every runnable
// command (parents excepted: they print their help) has a case in flagCases, or is listed in
// exemptCommands with its reason. Each case parses its flags on a factory that cannot reach any
// cluster (noClusterFactory), so no command needs one to turn its flags into its request.
func TestEveryCommandHasAFlagToRequestCase(t *testing.T) {
	root := newRootCmd(noClusterFactory(t))
	leaves := map[string]*cobra.Command{}
	walkCommands(root, func(c *cobra.Command) {
		if c.Runnable() && c.Annotations[parentAnnotation] == "" {
			leaves[c.CommandPath()] = c
		}
	})
	if len(leaves) < 25 {
		t.Fatalf("only %d runnable commands found", len(leaves))
	}
	for path, c := range leaves {
		if _, ok := exemptCommands[path]; ok {
			continue
		}
		tc, ok := flagCases[path]
		if !ok {
			t.Errorf("%s: no flag→request case: add one to flagCases (tree_test.go), or list it in exemptCommands with the reason", path)
			continue
		}
		t.Run(strings.TrimPrefix(path, "capctl "), func(t *testing.T) {
			if name := tc(t, noClusterFactory(t)); name != c.Name() {
				t.Errorf("the case builds %q, not %s", name, path)
			}
		})
	}
	for path := range flagCases {
		if leaves[path] == nil {
			t.Errorf("flagCases has %s, which is no runnable command of the tree", path)
		}
	}
	for path := range exemptCommands {
		if leaves[path] == nil {
			t.Errorf("exemptCommands has %s, which is no runnable command of the tree", path)
		}
		if flagCases[path] != nil {
			t.Errorf("%s is both exempt and has a case", path)
		}
	}
}

// TestFlagParsingTouchesNoCluster: the factory of the flag cases refuses clients, so a complete
// that asked for one would fail its case; here, that refusal itself is checked.
func TestFlagParsingTouchesNoCluster(t *testing.T) {
	f := noClusterFactory(t)
	var asked []string
	f.clientGuard = func(what string) error { asked = append(asked, what); return errNoCluster }
	if _, err := f.Cluster(t.Context()); err != errNoCluster {
		t.Errorf("Cluster: %v", err)
	}
	if _, err := f.Members(t.Context(), multicluster.Selection{Contexts: []string{"a"}}); err != errNoCluster {
		t.Errorf("Members: %v", err)
	}
	if _, err := f.repositoryClient(t.Context(), true); err != errNoCluster {
		t.Errorf("repository: %v", err)
	}
	if len(asked) != 3 {
		t.Errorf("asked for %v", asked)
	}
}
