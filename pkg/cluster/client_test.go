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
