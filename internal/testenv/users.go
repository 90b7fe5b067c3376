package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capctl/capctl/pkg/cluster"
)

// User adds a user (client-certificate authentication, with groups) to the server and returns a
// capctl client acting as that user: RBAC applies to it, unlike the admin Client.
func (e *Env) User(tb testing.TB, name string, groups ...string) *cluster.Client {
	tb.Helper()
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		tb.Fatalf("adding user %s: %v", name, err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "kubeconfig-"+name)
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		tb.Fatal(err)
	}
	c, err := cluster.New(cluster.Options{Kubeconfig: path})
	if err != nil {
		tb.Fatalf("connecting as %s: %v", name, err)
	}
	return c
}
