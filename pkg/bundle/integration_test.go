package bundle_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capctl/capctl/internal/testing/classfixture"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/bundle"
	"github.com/capctl/capctl/pkg/env"
)

// mgmt is a test API server with the v1.14 providers' CRDs, their inventory, a provider pod,
// the in-memory ClusterClass, two topology Clusters and Secrets of every kind in namespace fleet.
func mgmt(t *testing.T) *testenv.Env {
	t.Helper()
	crds := testenv.ComponentCRDs(t, "v1.14.0", "cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm", "infrastructure-docker")
	te := testenv.Start(t, testenv.Options{CRDPaths: []string{crds, filepath.Join(testenv.FixturesDir(t), "crds", "clusterctl.cluster.x-k8s.io.yaml")}})
	te.CreateNamespaces(t, "fleet", "capi-system")
	ctx := context.Background()
	classfixture.WriteInventory(t, te.Client, "v1.14.0", "capi-system")
	classfixture.Create(t, te.Client, "v1.14.0", "fleet", nil)
	for _, name := range []string{"c-1", "c-2"} {
		c := classfixture.Cluster("fleet", name, "v1.34.2", 0)
		if err := te.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "c-1-kubeconfig"}, Type: "cluster.x-k8s.io/secret",
			Data: map[string][]byte{"value": []byte("apiVersion: v1\nkind: Config\nusers: [{name: admin, user: {token: kubeconfig-token-d41d8cd98f}}]\n")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "c-1-md-0-bootstrap"}, Type: "cluster.x-k8s.io/secret",
			Data: map[string][]byte{"value": []byte("#cloud-config\nbootstrap-secret-5f4dcc3b5aa765d61d8327deb882cf99\n"), "format": []byte("cloud-config")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "c-1-ca"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----ca-cert-0cc175b9c0f1b6a8"), "tls.key": []byte("-----BEGIN PRIVATE KEY-----ca-key-92eb5ffee6ae2fec")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "robot-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "robot"}}, Type: corev1.SecretTypeServiceAccountToken,
			Data: map[string][]byte{"token": []byte("eyJhbGciOiJSUzI1NiJ9.robot-token-4a8a08f09d37b737")}},
	} {
		if err := te.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "capi-system", Name: "capi-controller-manager-0"},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "manager", Image: "registry.k8s.io/cluster-api/cluster-api-controller:v1.14.0"}}}}
	if err := te.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return te
}

// read is the bundle's files by name (in order) and their bytes, uncompressed.
func read(t testing.TB, path string) ([]string, map[string][]byte, []byte) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	files := map[string][]byte{}
	var all bytes.Buffer
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		files[h.Name] = data
		all.WriteString(h.Name + "\n")
		all.Write(data)
	}
	return names, files, all.Bytes()
}

// bundleHolds: what a bundle of a namespace holds, that no Secret value of the cluster is in it,
// that its manifest names what was left out and why, and that it is 0600.
func bundleHolds(t *testing.T, te *testenv.Env) {
	out := filepath.Join(t.TempDir(), "support.tar.gz")
	before := testenv.Snapshot(t, te.Client)
	res, err := bundle.Run(context.Background(), env.One(te.Client), bundle.Request{Output: out, Namespace: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Unchanged(t, te.Client, before, "diagnose bundle")
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the bundle's mode: %v %v", st, err)
	}
	names, files, all := read(t, out)
	if names[0] != "manifest.json" {
		t.Errorf("the first file is %s, want manifest.json", names[0])
	}
	for _, want := range []string{"crds.json", "versions.json", "inventory.json", "secrets.json", "objects/clusters.cluster.x-k8s.io.json",
		"objects/clusterclasses.cluster.x-k8s.io.json", "providers/capi-system/pods.json", "providers/capi-system/deployments.json", "events/fleet.json"} {
		if _, ok := files[want]; !ok {
			t.Errorf("the bundle has no %s: %v", want, names)
		}
	}
	if c := string(files["objects/clusters.cluster.x-k8s.io.json"]); !strings.Contains(c, `"c-1"`) || !strings.Contains(c, `"c-2"`) || strings.Contains(c, "managedFields") {
		t.Errorf("clusters.json: %.400s", c)
	}
	var secrets []struct {
		Name string   `json:"name"`
		Keys []string `json:"keys"`
	}
	if err := json.Unmarshal(files["secrets.json"], &secrets); err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, s := range secrets {
		listed[s.Name] = strings.Join(s.Keys, ",")
	}
	if listed["c-1-md-0-bootstrap"] != "format,value" || listed["c-1-ca"] != "tls.crt,tls.key" {
		t.Errorf("secrets.json: %s", files["secrets.json"])
	}
	if _, ok := listed["c-1-kubeconfig"]; ok {
		t.Error("a kubeconfig Secret is named in the bundle")
	}
	if _, ok := listed["robot-token"]; ok {
		t.Error("a token Secret is named in the bundle")
	}
	// Every Secret value of the whole cluster, as it is and base64-encoded: none in the bundle.
	all2 := &corev1.SecretList{}
	if err := te.Client.List(context.Background(), all2); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, s := range all2.Items {
		for k, v := range s.Data {
			if len(v) < 8 {
				continue
			}
			checked++
			for _, form := range [][]byte{v, []byte(base64.StdEncoding.EncodeToString(v))} {
				if bytes.Contains(all, form) {
					t.Errorf("the value of Secret %s/%s key %s is in the bundle", s.Namespace, s.Name, k)
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d Secret values checked: the grep would prove little", checked)
	}
	left := map[string]string{}
	for _, l := range res.Manifest.LeftOut {
		left[l.What] = l.Why
	}
	if !strings.Contains(left["logs/capi-system/capi-controller-manager-0/manager.log"], "pods/log") {
		t.Errorf("the log the server could not serve is not named as left out: %v", res.Manifest.LeftOut)
	}
	if !strings.Contains(left["2 kubeconfig and token Secrets"], "never bundled") || !strings.Contains(left["Secret data"], "never bundled") {
		t.Errorf("the manifest does not say the Secrets were left out: %v", res.Manifest.LeftOut)
	}
	if res.ExitCode() != 0 {
		t.Errorf("exit code %d, unread %v", res.ExitCode(), res.Manifest.Unread)
	}
}

// bundleBounds: --max-size leaves out what would pass it, named; a user who may not list
// Secrets gets a partial bundle (exit 3) naming them.
func bundleBounds(t *testing.T, te *testenv.Env) {
	dir := t.TempDir()
	res, err := bundle.Run(context.Background(), env.One(te.Client), bundle.Request{Output: filepath.Join(dir, "small.tar.gz"), Namespace: "fleet", MaxSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	_, files, _ := read(t, filepath.Join(dir, "small.tar.gz"))
	total := 0
	for name, data := range files {
		if name != "manifest.json" {
			total += len(data)
		}
	}
	sizeLeft := 0
	for _, l := range res.Manifest.LeftOut {
		if strings.Contains(l.Why, "--max-size 4096") {
			sizeLeft++
		}
	}
	if total > 4096 || sizeLeft == 0 {
		t.Errorf("with --max-size 4096: %d bytes bundled, %d files left out for size: %v", total, sizeLeft, res.Manifest.LeftOut)
	}

	te.GrantAllBut(t, "no-secrets", map[string][]string{"secrets": {"list"}, "pods/log": {"get"}})
	res, err = bundle.Run(context.Background(), env.One(te.User(t, "no-secrets")), bundle.Request{Output: filepath.Join(dir, "partial.tar.gz"), Namespace: "fleet"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode() != 3 || len(res.Manifest.Unread) != 1 || res.Manifest.Unread[0].Resource != "secrets" {
		t.Errorf("without list on Secrets: exit %d, unread %v", res.ExitCode(), res.Manifest.Unread)
	}
	logLeft := ""
	for _, l := range res.Manifest.LeftOut {
		if l.What == "logs/capi-system/capi-controller-manager-0/manager.log" {
			logLeft = l.Why
		}
	}
	if !strings.Contains(logLeft, "pods/log") || !strings.Contains(logLeft, "forbidden") {
		t.Errorf("without get on pods/log the log is not named as left out, forbidden: %q", logLeft)
	}
}

// TestBundle is the bundle's checks on one test API server: what a bundle holds (first, on the
// untouched server), then its bounds.
func TestBundle(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	te := mgmt(t)
	t.Run("holds", func(t *testing.T) { bundleHolds(t, te) })
	t.Run("bounds", func(t *testing.T) { bundleBounds(t, te) })
}
