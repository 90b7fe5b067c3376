package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/inventory"
)

// initTestConfig writes a clusterctl.yaml whose Cluster API providers and cert-manager come from
// the fixture repository.
func initTestConfig(t *testing.T, fixtures string) string {
	t.Helper()
	dir := t.TempDir()
	repo := filepath.Join(fixtures, "repository")
	body := fmt.Sprintf("overridesFolder: %s\ncert-manager:\n  url: %s\n  version: v1.21.1\n  timeout: 30s\nproviders:\n",
		filepath.Join(dir, "overrides"), filepath.Join(repo, "cert-manager", "v1.21.1", "cert-manager-crds.yaml"))
	for _, p := range []struct{ name, typ, label, file string }{
		{"cluster-api", "CoreProvider", "cluster-api", "core-components.yaml"},
		{"kubeadm", "BootstrapProvider", "bootstrap-kubeadm", "bootstrap-components.yaml"},
		{"kubeadm", "ControlPlaneProvider", "control-plane-kubeadm", "control-plane-components.yaml"},
		{"docker", "InfrastructureProvider", "infrastructure-docker", "infrastructure-components.yaml"},
	} {
		body += fmt.Sprintf("- name: %s\n  type: %s\n  url: %s\n", p.name, p.typ, filepath.Join(repo, p.label, "latest", p.file))
	}
	path := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInitUsageErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing-kubeconfig")
	for args, want := range map[string]string{
		"init --core -":                          "can not be used for the core provider",
		"init -i docker -i docker:v1.14.0":       "named twice",
		"init -i a:b:c":                          "more than one ':'",
		"init --wait-provider-timeout 0":         "--wait-provider-timeout must be a positive",
		"init -n Not_A_Namespace":                "--target-namespace",
		"init -o xml":                            "invalid output format",
		"init list-images --bootstrap kubeadm:x": "not a semantic version",
	} {
		// A kubeconfig that does not exist proves the flags are checked before any cluster call.
		_, errOut, code := runCapctl(t, append(strings.Fields(args), "--kubeconfig", missing)...)
		if code == 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%s: exit %d, stderr:\n%s", args, code, errOut)
		}
	}
}

func TestInitCommand(t *testing.T) {
	testenv.Integration(t)
	fixtures := testenv.FixturesDir(t)
	cfg := initTestConfig(t, fixtures)
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	ctl := installtest.Start(ctx, env.Client, installtest.Options{Interval: 250 * time.Millisecond})
	defer ctl.Stop()
	common := []string{"--kubeconfig", env.Kubeconfig, "--config", cfg}

	out, errOut, code := runCapctl(t, append([]string{"init", "--core", "cluster-api:v1.14.0", "-i", "docker:v1.14.0", "--wait-provider-timeout", "120"}, common...)...)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"Resolved providers:", "install (first-init default)", "Fetching providers",
		`Installing cert-manager version="v1.21.1"`, "Waiting for cert-manager to be available...",
		`Installing provider="cluster-api" version="v1.14.0" targetNamespace="capi-system"`,
		`Installing provider="infrastructure-docker" version="v1.14.0" targetNamespace="capd-system"`,
		"Waiting for providers to be available...",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, want := range []string{"control-plane-kubeadm", "capi-kubeadm-control-plane-system", "installed (", "cert-manager v1.21.1 installed (6 objects)", "Your management cluster has been initialized successfully!", "capctl generate cluster [name]"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	items, err := inventory.List(ctx, env.Client)
	if err != nil || len(items) != 4 {
		t.Fatalf("inventory %v %v", items, err)
	}

	// The same init again changes nothing and says so.
	out, errOut, code = runCapctl(t, append([]string{"init", "--core", "cluster-api:v1.14.0", "-i", "docker:v1.14.0"}, common...)...)
	if code != 0 || !strings.Contains(out, "Nothing to do: every requested provider is already installed at that version") {
		t.Errorf("re-run: exit %d\n%s\n%s", code, out, errOut)
	}
	// Another version is refused with the way forward.
	_, errOut, code = runCapctl(t, append([]string{"init", "-i", "docker:v1.13.5"}, common...)...)
	if code == 0 || !strings.Contains(errOut, "capctl upgrade apply") || strings.Contains(errOut, "Usage:") {
		t.Errorf("other version: exit %d\n%s", code, errOut)
	}
	// A machine-readable result.
	out, _, code = runCapctl(t, append([]string{"init", "-i", "docker:v1.14.0", "-o", "json"}, common...)...)
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["noOp"] != true {
		t.Errorf("json: exit %d %s", code, out)
	}

	// list-images against this cluster: cert-manager's namespace does not exist (CRDs only), so its
	// (empty) image list is consulted; the providers' images are listed.
	out, errOut, code = runCapctl(t, append([]string{"init", "list-images", "-i", "docker:v1.14.0"}, common...)...)
	if code != 0 || out != "gcr.io/k8s-staging-cluster-api/capd-manager:v1.14.0\n" {
		t.Errorf("list-images: exit %d\n%q\n%s", code, out, errOut)
	}
}

func TestInitListImagesWithoutACluster(t *testing.T) {
	fixtures := testenv.FixturesDir(t)
	cfg := initTestConfig(t, fixtures)
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv("HOME", t.TempDir())
	out, errOut, code := runCapctl(t, "init", "list-images", "--config", cfg, "--core", "cluster-api:v1.14.0", "-b", "kubeadm:v1.14.0", "-c", "kubeadm:v1.14.0", "-i", "docker:v1.14.0")
	want := "gcr.io/k8s-staging-cluster-api/capd-manager:v1.14.0\nregistry.k8s.io/cluster-api/cluster-api-controller:v1.14.0\nregistry.k8s.io/cluster-api/kubeadm-bootstrap-controller:v1.14.0\nregistry.k8s.io/cluster-api/kubeadm-control-plane-controller:v1.14.0\n"
	if code != 0 || out != want || !strings.Contains(errOut, "No management cluster consulted") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, _, code = runCapctl(t, "init", "list-images", "--config", cfg, "-i", "docker:v1.14.0", "-o", "json")
	var imgs struct {
		Images              []string `json:"images"`
		CertManagerIncluded bool     `json:"certManagerIncluded"`
		NoCluster           bool     `json:"noCluster"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &imgs) != nil || !imgs.NoCluster || !imgs.CertManagerIncluded || len(imgs.Images) != 4 {
		t.Errorf("json: exit %d %s", code, out)
	}
}
