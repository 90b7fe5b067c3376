package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/kubeconfig"
)

func TestGetKubeconfigCommand(t *testing.T) {
	testenv.Integration(t)
	env := testenv.Start(t, testenv.Options{CRDPaths: []string{filepath.Join(testenv.RepoRoot(), "pkg", "kubeconfig", "testdata", "clusters-crd.yaml")}})
	ctx := context.Background()
	env.CreateNamespaces(t, "fleet")
	cl := &unstructured.Unstructured{}
	cl.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	cl.SetKind("Cluster")
	for _, n := range []string{"prod", "staging"} {
		cl.SetNamespace("fleet")
		cl.SetName(n)
		cl.SetResourceVersion("")
		if err := env.Client.Create(ctx, cl.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	const kc = "apiVersion: v1\nkind: Config\nclusters: []\n"
	if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "prod-kubeconfig"},
		Data: map[string][]byte{"value": []byte(kc)}}); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runCapctl(t, "get", "kubeconfig", "prod", "-n", "fleet", "--kubeconfig", env.Kubeconfig)
	if code != 0 || out != kc {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}

	file := filepath.Join(t.TempDir(), "prod.kubeconfig")
	out, errOut, code = runCapctl(t, "get", "kubeconfig", "prod", "-n", "fleet", "--write-to", file, "--kubeconfig", env.Kubeconfig)
	if code != 0 || out != "" || !strings.Contains(errOut, file) {
		t.Fatalf("--write-to: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("written file: %v %v", st, err)
	}

	_, errOut, code = runCapctl(t, "get", "kubeconfig", "staging", "-n", "fleet", "--kubeconfig", env.Kubeconfig)
	if code == 0 || !strings.Contains(errOut, `"staging-kubeconfig"`) || !strings.Contains(errOut, "exists") {
		t.Errorf("secret missing: exit %d, stderr %s", code, errOut)
	}
	_, errOut, code = runCapctl(t, "get", "kubeconfig", "nope", "-n", "fleet", "--kubeconfig", env.Kubeconfig)
	if code == 0 || !strings.Contains(errOut, `cluster "nope" not found`) || !strings.Contains(errOut, "prod, staging") {
		t.Errorf("cluster missing: exit %d, stderr %s", code, errOut)
	}
	// The context's namespace (default) is used without -n.
	_, errOut, code = runCapctl(t, "get", "kubeconfig", "prod", "--kubeconfig", env.Kubeconfig)
	if code == 0 || !strings.Contains(errOut, `namespace "default"`) {
		t.Errorf("default namespace: exit %d, stderr %s", code, errOut)
	}
	_, errOut, code = runCapctl(t, "get", "kubeconfig", "Bad_Name", "--kubeconfig", env.Kubeconfig)
	if code == 0 || !strings.Contains(errOut, "invalid cluster name") {
		t.Errorf("bad name: exit %d, stderr %s", code, errOut)
	}
	// run with Options and clients given by the test: over an existing 0644 file the kubeconfig
	// ends up 0600.
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	io, _, _, stderr := iostreams.Test()
	o := &GetKubeconfigOptions{Request: kubeconfig.GetRequest{Cluster: "prod", Namespace: "fleet"}, WriteTo: file, deps: deps{IO: io,
		Cluster: func(ctx context.Context) (*cluster.Client, error) {
			return cluster.Connect(ctx, cluster.Options{Kubeconfig: env.Kubeconfig})
		}}}
	if err := runGetKubeconfig(ctx, o); err != nil {
		t.Fatal(err)
	}
	st, err = os.Stat(file)
	if b, _ := os.ReadFile(file); err != nil || st.Mode().Perm() != 0o600 || string(b) != kc || !strings.Contains(stderr.String(), "Secret prod-kubeconfig") {
		t.Errorf("run over a 0644 file: mode %v, content %q, stderr %s, %v", st.Mode().Perm(), b, stderr, err)
	}
}
