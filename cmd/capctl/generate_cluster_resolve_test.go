package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenerateClusterListVariablesAgreesWithGeneration: machine counts and the Kubernetes
// version set in the config file are what generation uses, and --list-variables shows them.
func TestGenerateClusterListVariablesAgreesWithGeneration(t *testing.T) {
	cfg := repoTestConfig(t, "CONTROL_PLANE_MACHINE_COUNT: \"3\"\nKUBERNETES_VERSION: v1.33.0\n")
	noCluster(t)
	args := []string{"generate", "cluster", "c1", "--config", cfg, "-i", "docker:v1.14.0", "--flavor", "development", "-n", "ns1"}
	out, errOut, code := runCapctl(t, args...)
	if code != 0 || !strings.Contains(out, "version: v1.33.0") || !strings.Contains(out, "replicas: 3") {
		t.Fatalf("generation: exit %d, %s\n%s", code, errOut, out)
	}
	out, errOut, code = runCapctl(t, append(args, "--list-variables")...)
	if code != 0 {
		t.Fatalf("--list-variables: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "Required Variables") {
		t.Errorf("--list-variables says something is required while generation needed nothing:\n%s", out)
	}
	for _, want := range []string{"CONTROL_PLANE_MACHINE_COUNT    (defaults to 3)", "KUBERNETES_VERSION             (defaults to v1.33.0)"} {
		if !strings.Contains(out, want) {
			t.Errorf("--list-variables lacks %q:\n%s", want, out)
		}
	}
}

// TestGenerateClusterWarnsWhenManagementClusterUnreachable: a kubeconfig whose server
// certificate does not verify still generates (the template needs no cluster), but says in one
// stderr line at -v 0 that the management cluster was not consulted.
func TestGenerateClusterWarnsWhenManagementClusterUnreachable(t *testing.T) {
	cfg := repoTestConfig(t, "")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"major":"1","minor":"34"}`))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are expected
	srv.StartTLS()
	defer srv.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: ctx, context: {cluster: c, user: u, namespace: team-a}}]
current-context: ctx
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCapctl(t, "generate", "cluster", "c1", "--config", cfg, "--kubeconfig", kc, "-i", "docker:v1.14.0",
		"--flavor", "development", "--kubernetes-version", "v1.34.1")
	if code != 0 || !strings.Contains(out, "namespace: team-a") {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "Warning") || !strings.Contains(lines[0], "certificate") || !strings.Contains(lines[0], srv.URL) {
		t.Errorf("want one warning line naming the server and the certificate problem, got:\n%s", errOut)
	}
}

// TestGenerateClusterFromFileDoesNotConsultTheCluster: a --from template needs no management
// cluster, so an unreachable one is neither contacted nor warned about.
func TestGenerateClusterFromFileDoesNotConsultTheCluster(t *testing.T) {
	cfg := repoTestConfig(t, "")
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: ctx, context: {cluster: c, user: u, namespace: team-b}}]
current-context: ctx
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCapctlWithInput(t, "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: ${CLUSTER_NAME}\n",
		"generate", "cluster", "c1", "--config", cfg, "--kubeconfig", kc, "--from", "-")
	if code != 0 || errOut != "" || !strings.Contains(out, "namespace: team-b") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
}
