package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capctl/capctl/pkg/repository"
)

func TestGenerateProviderDockerLikeClusterctl(t *testing.T) {
	cfg := repoTestConfig(t, "")
	t.Setenv("CAPD_DOCKER_HOST", "unix:///run/docker.sock")
	out, errOut, code := runCapctl(t, "generate", "provider", "--infrastructure", "docker:v1.14.0", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	objs, err := repository.ParseYAML("stdout", []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < 20 || objs[0].GetKind() != "Namespace" || objs[0].GetName() != "capd-system" {
		t.Fatalf("%d objects, first %s/%s", len(objs), objs[0].GetKind(), objs[0].GetName())
	}
	for _, o := range objs {
		if o.GetLabels()["cluster.x-k8s.io/provider"] != "infrastructure-docker" {
			t.Errorf("%s/%s without the provider label", o.GetKind(), o.GetName())
		}
		if repository.IsNamespaced(o.GetKind()) && o.GetNamespace() != "capd-system" {
			t.Errorf("%s/%s in %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	for _, want := range []string{"--feature-gates=MachinePool=true,ClusterTopology=false,PriorityQueue=true,ReconcilerRateLimiting=true", "value: unix:///run/docker.sock", "image: gcr.io/k8s-staging-cluster-api/capd-manager:v1.14.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "${") {
		t.Error("unsubstituted variables left")
	}

	// --raw keeps the variables; --target-namespace moves everything.
	out, _, code = runCapctl(t, "generate", "provider", "-i", "docker:v1.14.0", "--raw", "-n", "docker-here", "--config", cfg)
	if code != 0 || !strings.Contains(out, "${CAPD_DOCKER_HOST:=\"\"}") || strings.Contains(out, "capd-system") || !strings.Contains(out, "namespace: docker-here") {
		t.Errorf("--raw -n: exit %d", code)
	}

	// --describe.
	out, _, code = runCapctl(t, "generate", "provider", "--core", "cluster-api:v1.10.10", "--describe", "--config", cfg)
	for _, want := range []string{"Name:               cluster-api", "Version:            v1.10.10", "Contract:           v1beta1", "TargetNamespace:    capi-system", "Variables:", "Images:", "registry.k8s.io/cluster-api/cluster-api-controller:v1.10.10"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--describe lacks %q:\n%s", want, out)
		}
	}

	// --write-to writes a private file and nothing to stdout.
	dst := filepath.Join(t.TempDir(), "kubeadm.yaml")
	out, _, code = runCapctl(t, "generate", "provider", "--bootstrap", "kubeadm", "--write-to", dst, "--config", cfg)
	st, err := os.Stat(dst)
	if code != 0 || out != "" || err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("--write-to: exit %d, stdout %q, %v %v", code, out, err, st)
	}

	// Over an existing world-readable file, the credentials do not stay readable: 0600.
	if err := os.WriteFile(dst, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dst, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCapctl(t, "generate", "provider", "--bootstrap", "kubeadm", "--write-to", dst, "--config", cfg)
	st, err = os.Stat(dst)
	if code != 0 || err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("--write-to over a 0644 file: exit %d %s, %v, mode %v", code, errOut, err, st.Mode().Perm())
	}
	if b, _ := os.ReadFile(dst); !strings.Contains(string(b), "kind: Namespace") {
		t.Errorf("--write-to over a 0644 file: content %.80q", b)
	}
}

func TestGenerateProviderBadInputs(t *testing.T) {
	cfg := repoTestConfig(t, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--infrastructure", "aws:"}, "version after ':' is empty"},
		{[]string{"--infrastructure", ":v1"}, "name is empty"},
		{[]string{"--infrastructure", "aws:1.2.x"}, "semantic version"},
		{[]string{}, "is required"},
		{[]string{"--core", "cluster-api", "-i", "docker"}, "none of the others can be; [core infrastructure] were all set"},
		{[]string{"-i", "docker", "-n", "Bad_NS"}, "--target-namespace"},
	} {
		_, errOut, code := runCapctl(t, append([]string{"generate", "provider", "--config", cfg}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: want usage error %q, got %d %s", tc.args, tc.want, code, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-i", "dokcer"}, []string{"unknown InfrastructureProvider \"dokcer\"", "closest known: docker"}},
		{[]string{"-i", "docker:v1.13.9"}, []string{"no version v1.13.9", "nearest available: v1.13.5, v1.13.4"}},
	} {
		_, errOut, code := runCapctl(t, append([]string{"generate", "provider", "--config", cfg}, tc.args...)...)
		for _, w := range tc.want {
			if code == 0 || !strings.Contains(errOut, w) {
				t.Errorf("%v: want %q, got %d %s", tc.args, w, code, errOut)
			}
		}
		if strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: not a usage error", tc.args)
		}
	}
}
