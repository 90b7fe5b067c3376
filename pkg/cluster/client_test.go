package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/internal/testing/userinputtest"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/cluster"
)

func TestConnectToRealAPIServer(t *testing.T) {
	testenv.Integration(t)
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)

	c, err := cluster.Connect(ctx, cluster.Options{Kubeconfig: env.Kubeconfig})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if c.Config.QPS != cluster.DefaultQPS || c.Config.Burst != cluster.DefaultBurst {
		t.Errorf("QPS/burst = %v/%v", c.Config.QPS, c.Config.Burst)
	}
	before := c.Requests()
	ns := &corev1.NamespaceList{}
	if err := c.List(ctx, ns); err != nil {
		t.Fatalf("listing namespaces: %v", err)
	}
	if len(ns.Items) == 0 {
		t.Error("a fresh API server should have namespaces")
	}
	if c.Requests() <= before {
		t.Error("requests were not counted")
	}
	if c.Namespace != "default" {
		t.Errorf("namespace = %q", c.Namespace)
	}
}

func TestUnknownContextListsContexts(t *testing.T) {
	kc := writeKubeconfig(t, "https://127.0.0.1:1")
	_, err := cluster.New(cluster.Options{Kubeconfig: kc, Context: "nope"})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "mgmt") || !strings.Contains(err.Error(), kc) {
		t.Fatalf("want an error naming the context, the file and the contexts that exist; got %v", err)
	}
}

func TestMissingKubeconfig(t *testing.T) {
	_, err := cluster.New(cluster.Options{Kubeconfig: "/does/not/exist"})
	if err == nil || !strings.Contains(err.Error(), "/does/not/exist") {
		t.Fatalf("got %v", err)
	}
}

func TestUnreachableServerFailsFast(t *testing.T) {
	// A closed port on loopback: the check must fail quickly and say where it looked.
	kc := writeKubeconfig(t, "https://127.0.0.1:1")
	start := time.Now()
	_, err := cluster.Connect(context.Background(), cluster.Options{Kubeconfig: kc, ConnectTimeout: 3 * time.Second})
	if err == nil {
		t.Fatal("connected to nothing")
	}
	if !errors.Is(err, cluster.ErrUnreachable) {
		t.Errorf("error is not ErrUnreachable: %v", err)
	}
	for _, want := range []string{kc, "mgmt", "127.0.0.1:1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q: %v", want, err)
		}
	}
	// Not a timing assertion on speed, only a bound that shows the timeout is honoured at all.
	if time.Since(start) > time.Minute {
		t.Errorf("the connection check ignored its timeout")
	}
}

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["mgmt"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: "team-a"}
	cfg.CurrentContext = "mgmt"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKubeconfigReadsAreBounded: a kubeconfig that is an endless stream, given as --kubeconfig or
// in KUBECONFIG, is refused within the input bound, naming the file; so is one over the bound.
// (TestKubeconfigOnAFIFO: a FIFO is still read.)
func TestKubeconfigReadsAreBounded(t *testing.T) {
	defer userinput.SetMax(userinput.SetMax(1 << 20))
	zero := filepath.Join(t.TempDir(), "kubeconfig")
	userinputtest.DevZeroAt(t, zero)
	_, err := cluster.New(cluster.Options{Kubeconfig: zero})
	if err == nil || !strings.Contains(err.Error(), zero) || !strings.Contains(err.Error(), "larger than 1Mi") {
		t.Fatalf("--kubeconfig to /dev/zero: %v, want a refusal naming it and the bound", err)
	}
	t.Setenv("KUBECONFIG", zero)
	_, err = cluster.New(cluster.Options{})
	if err == nil || !strings.Contains(err.Error(), zero) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("KUBECONFIG to /dev/zero: %v, want a refusal naming it", err)
	}

	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", big)
	if _, err = cluster.New(cluster.Options{}); err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "--max-input-size") {
		t.Fatalf("KUBECONFIG of 2 MiB: %v, want a refusal naming it and --max-input-size", err)
	}
}
