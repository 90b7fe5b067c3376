package main

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/version"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/contract"
	deletion "github.com/capctl/capctl/pkg/deletion"
	clusterinit "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/kubeconfig"
	"github.com/capctl/capctl/pkg/provider"
)

// errNoCluster makes any cluster call of a test fail loudly: flag parsing must not need one.
var errNoCluster = errors.New("test: no cluster may be contacted while parsing flags")

// parseOptions runs a command's constructor with args and captures the Options its run function
// would get, with a factory that cannot reach any cluster (noClusterFactory).
func parseOptions[T any](t *testing.T, build func(*factory, func(*T) error) *cobra.Command, args ...string) (*T, error) {
	t.Helper()
	got, _, err := parseOptionsWith(t, noClusterFactory(t), build, args...)
	return got, err
}

// parseOptionsWith is parseOptions with the factory given; it also returns the command built.
func parseOptionsWith[T any](t *testing.T, f *factory, build func(*factory, func(*T) error) *cobra.Command, args ...string) (*T, *cobra.Command, error) {
	t.Helper()
	var got *T
	cmd := build(f, func(o *T) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(f.IO.Out)
	cmd.SetErr(f.IO.ErrOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	if err == nil && got == nil {
		t.Fatalf("%v: run function not called", args)
	}
	return got, cmd, err
}

// noClusterFactory is a factory that cannot reach any cluster: KUBECONFIG names a file that does
// not exist, and asking it for a cluster (or the management clusters of --contexts, or the
// provider repositories) fails the test. Flag parsing (complete) must never need one.
func noClusterFactory(t *testing.T) *factory {
	t.Helper()
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-such-kubeconfig"))
	io, _, _, _ := iostreams.Test()
	f := newFactory(io)
	f.clientGuard = func(what string) error {
		t.Errorf("%s was asked for while the flags were parsed", what)
		return errNoCluster
	}
	return f
}

func TestInitFlagsToOptions(t *testing.T) {
	o, err := parseOptions(t, newCmdInit, "--core", "cluster-api:v1.14.0", "-b", "kubeadm:v1.14.0,-", "-i", "docker",
		"-n", "capi", "--wait-provider-timeout", "42", "--dry-run", "--validate=false", "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := clusterinit.Selection{Core: "cluster-api:v1.14.0", Bootstrap: []string{"kubeadm:v1.14.0", "-"}, Infrastructure: []string{"docker"}}
	if !reflect.DeepEqual(o.Selection, want) || o.TargetNamespace != "capi" || o.WaitProviderTimeout != 42*time.Second ||
		!o.DryRun || o.StrictChecks || !o.WaitProviders || o.Output != output.YAML {
		t.Errorf("options %+v", o)
	}
	o, err = parseOptions(t, newCmdInit)
	if err != nil || o.Output != output.Text || o.WaitProviderTimeout != 300*time.Second || !o.StrictChecks {
		t.Errorf("defaults: %+v %v", o, err)
	}
	for args, msg := range map[string]string{
		"--wait-provider-timeout 0": "must be a positive", "-o table": "invalid output format", "--core -": "core provider",
	} {
		if _, err := parseOptions(t, newCmdInit, strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v", args, err)
		}
	}
}

func TestDeleteFlagsToOptions(t *testing.T) {
	o, err := parseOptions(t, newCmdDelete, "-i", "capd-system/docker:v1.14.0", "-b", "kubeadm", "--include-crd", "-y", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	want := []deletion.Selection{
		{Type: provider.BootstrapProviderType, Name: "kubeadm"},
		{Type: provider.InfrastructureProviderType, Name: "docker", Namespace: "capd-system", Version: "v1.14.0"},
	}
	if !reflect.DeepEqual(o.Request.Providers, want) || !o.Request.IncludeCRD || o.Request.IncludeNamespace || !o.Yes || o.Output != output.JSON {
		t.Errorf("options %+v", o)
	}
	if _, err := parseOptions(t, newCmdDelete, "-i", "docker:latest"); err == nil || !strings.Contains(err.Error(), "give the installed version") {
		t.Errorf("latest: %v", err)
	}
	if _, err := parseOptions(t, newCmdDelete); err == nil {
		t.Error("nothing to delete accepted")
	}
}

func TestUpgradeFlagsToOptions(t *testing.T) {
	o, err := parseOptions(t, newCmdUpgradeApply, "--core", "capi-system/cluster-api:v1.14.1", "-i", "docker:v1.14.1", "--wait-provider-timeout", "7")
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Request.Providers) != 2 || o.Request.Providers[0].Type != provider.CoreProviderType || o.Request.Providers[0].Ref.Namespace != "capi-system" ||
		o.Request.Providers[1].Ref.Version != "v1.14.1" || o.WaitTimeout != 7*time.Second || o.Output != output.Text {
		t.Errorf("options %+v", o)
	}
	o, err = parseOptions(t, newCmdUpgradeApply, "--contract", contract.Current)
	if err != nil || o.Request.Contract != contract.Current || len(o.Request.Providers) != 0 {
		t.Errorf("contract: %+v %v", o, err)
	}
	p, err := parseOptions(t, newCmdUpgradePlan, "--kubernetes-version", "v1.33.2", "-o", "text")
	if err != nil || p.KubernetesVersion != "v1.33.2" || p.Output != output.Text {
		t.Errorf("plan: %+v %v", p, err)
	}
	// The spelling without v is accepted, as generate cluster accepts it, and made canonical.
	if p, err = parseOptions(t, newCmdUpgradePlan, "--kubernetes-version", "1.33.2"); err != nil || p.KubernetesVersion != "v1.33.2" {
		t.Errorf("plan without v: %+v %v", p, err)
	}
}

func TestGenerateProviderFlagsToOptions(t *testing.T) {
	o, err := parseOptions(t, newCmdGenerateProvider, "-c", "kubeadm:v1.14.0", "-n", "cp", "--raw", "--write-to", "out.yaml", "--offline")
	if err != nil {
		t.Fatal(err)
	}
	if o.Type != provider.ControlPlaneProviderType || o.Ref.Name != "kubeadm" || o.Ref.Version != "v1.14.0" || o.TargetNamespace != "cp" ||
		!o.Raw || o.WriteTo != "out.yaml" || !o.Offline {
		t.Errorf("options %+v", o)
	}
}

func TestGetKubeconfigAndMirrorFlagsToOptions(t *testing.T) {
	g, err := parseOptions(t, newCmdGetKubeconfig, "c1", "-n", "fleet", "--write-to", "k")
	if err != nil || g.Request.Cluster != "c1" || g.Request.Namespace != "fleet" || g.WriteTo != "k" {
		t.Errorf("get kubeconfig: %+v %v", g, err)
	}
	dir := t.TempDir()
	m, err := parseOptions(t, newCmdRepositoryMirror, "--to", dir, "infrastructure-docker:v1.14.0")
	want := []MirrorRef{{Label: "infrastructure-docker", Name: "docker", Version: "v1.14.0", Type: provider.InfrastructureProviderType}}
	if err != nil || !reflect.DeepEqual(m.Providers, want) || !m.CertManager || m.Output != output.Text {
		t.Errorf("mirror: %+v %v", m, err)
	}
	m, err = parseOptions(t, newCmdRepositoryMirror, "--to", dir)
	if err != nil || len(m.Providers) != 3 || m.Providers[0].Label != "cluster-api" {
		t.Errorf("mirror defaults: %+v %v", m, err)
	}
}

// run functions are tested with the clients a test gives them: here list-images with no
// management cluster, and get kubeconfig whose cluster call fails.
func TestRunWithTestClients(t *testing.T) {
	cfgPath := repoTestConfig(t, "")
	io, _, out, errOut := iostreams.Test()
	d := deps{
		IO: io,
		Config: func(ctx context.Context) (*config.Config, error) {
			return config.Load(ctx, config.Options{Path: cfgPath})
		},
		OptionalCluster: func(context.Context) (*cluster.Client, error) { return nil, nil },
		Cluster:         func(context.Context) (*cluster.Client, error) { return nil, errNoCluster },
	}
	f := newFactory(io)
	f.global.configPath = cfgPath
	d.Repository, d.Logger = f.repositoryClient, f.Logger
	o := &ListImagesOptions{deps: d, providerFlags: providerFlags{Selection: clusterinit.Selection{Infrastructure: []string{"docker:v1.14.0"}, Bootstrap: []string{"-"}, ControlPlane: []string{"-"}, Core: "cluster-api:v1.14.0"}}, Output: output.Text}
	if err := runListImages(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "gcr.io/k8s-staging-cluster-api/capd-manager:v1.14.0\n") || !strings.Contains(errOut.String(), "No management cluster consulted") {
		t.Errorf("stdout %q stderr %q", out.String(), errOut.String())
	}
	g := &GetKubeconfigOptions{deps: d, Request: kubeconfig.GetRequest{Cluster: "c1"}, WriteTo: filepath.Join(t.TempDir(), "k")}
	if err := runGetKubeconfig(context.Background(), g); !errors.Is(err, errNoCluster) {
		t.Errorf("get kubeconfig: %v", err)
	}
	out.Reset()
	if err := runVersion(context.Background(), &VersionOptions{deps: d, Output: output.Short, Info: version.Info{GitVersion: "v9.9.9"}}); err != nil || out.String() != "v9.9.9\n" {
		t.Errorf("version short: %q %v", out.String(), err)
	}
}
