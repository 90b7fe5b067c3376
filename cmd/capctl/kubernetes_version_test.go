package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestKubernetesVersionSpellingsAgree: generate cluster and upgrade plan accept the same
// --kubernetes-version spellings (1.34.1 and v1.34.1), and both use it as v1.34.1. Before one
// semver parser served both, generate accepted 1.34.1 (and wrote it as typed) while upgrade plan
// refused it.
func TestKubernetesVersionSpellingsAgree(t *testing.T) {
	cfg := repoTestConfig(t, "")
	noCluster(t)
	want := goldenFile(t, "v1.14.0", "cluster-template-development.yaml")
	for _, v := range []string{"v1.34.1", "1.34.1"} {
		out, errOut, code := runCapctl(t, "generate", "cluster", "golden", "--config", cfg, "-i", "docker:v1.14.0", "--flavor", "development",
			"--kubernetes-version", v, "-n", "team-a", "--control-plane-machine-count", "3", "--worker-machine-count", "2",
			"--set", "POD_SECURITY_STANDARD_ENABLED=false")
		if code != 0 {
			t.Fatalf("generate cluster --kubernetes-version %s: exit %d: %s", v, code, errOut)
		}
		if out != want {
			t.Errorf("generate cluster --kubernetes-version %s: output differs from the golden file (written as v1.34.1)", v)
		}

		// An unreachable kubeconfig: the version passes validation, the connection is what fails.
		missing := filepath.Join(t.TempDir(), "missing")
		_, errOut, code = runCapctl(t, "upgrade", "plan", "--kubernetes-version", v, "--kubeconfig", missing, "--config", cfg)
		if code == 0 || strings.Contains(errOut, "Usage:") || !strings.Contains(errOut, missing) {
			t.Errorf("upgrade plan --kubernetes-version %s: exit %d, want a connection error naming %s, not a usage error:\n%s", v, code, missing, errOut)
		}
	}
	for _, bad := range []string{"v1.34", "latest"} {
		for _, args := range [][]string{
			{"generate", "cluster", "c1", "--from", "a.yaml", "--kubernetes-version", bad},
			{"upgrade", "plan", "--kubernetes-version", bad, "--kubeconfig", filepath.Join(t.TempDir(), "missing")},
		} {
			if _, errOut, code := runCapctl(t, append(args, "--config", cfg)...); code == 0 || !strings.Contains(errOut, "Usage:") {
				t.Errorf("%v: exit %d, want a usage error:\n%s", args, code, errOut)
			}
		}
	}
}
