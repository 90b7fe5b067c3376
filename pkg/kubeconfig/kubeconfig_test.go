package kubeconfig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
)

func newCluster(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	u.SetKind("Cluster")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func TestGet(t *testing.T) {
	testenv.Integration(t)
	env := testenv.Start(t, testenv.Options{CRDPaths: []string{"testdata/clusters-crd.yaml"}})
	ctx := context.Background()
	c := env.Client
	env.CreateNamespaces(t, "fleet")
	for _, name := range []string{"alpha", "beta", "eks"} {
		if err := c.Create(ctx, newCluster("fleet", name)); err != nil {
			t.Fatal(err)
		}
	}
	secret := func(name string, data map[string][]byte) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name}, Data: data}
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	secret("alpha-kubeconfig", map[string][]byte{"value": []byte("apiVersion: v1\nkind: Config\n# alpha\n")})
	secret("eks-user-kubeconfig", map[string][]byte{"value": []byte("# eks user\n")})
	secret("orphan-kubeconfig", map[string][]byte{"other": []byte("x")})

	t.Run("present", func(t *testing.T) {
		r, err := Get(ctx, c, "fleet", "alpha")
		if err != nil {
			t.Fatal(err)
		}
		if r.Secret != "alpha-kubeconfig" || !strings.Contains(string(r.Data), "# alpha") {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("user kubeconfig fallback", func(t *testing.T) {
		r, err := Get(ctx, c, "fleet", "eks")
		if err != nil {
			t.Fatal(err)
		}
		if r.Secret != "eks-user-kubeconfig" || string(r.Data) != "# eks user\n" {
			t.Fatalf("got %+v", r)
		}
	})
	t.Run("secret missing", func(t *testing.T) {
		_, err := Get(ctx, c, "fleet", "beta")
		var se *SecretNotFoundError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), `"beta-kubeconfig"`) {
			t.Fatalf("want SecretNotFoundError, got %v", err)
		}
	})
	t.Run("cluster missing", func(t *testing.T) {
		_, err := Get(ctx, c, "fleet", "gamma")
		var ce *cluster.ClusterNotFoundError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "alpha, beta, eks") {
			t.Fatalf("want ClusterNotFoundError listing clusters, got %v", err)
		}
		_, err = Get(ctx, c, "default", "alpha")
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "no clusters in that namespace") ||
			!strings.Contains(err.Error(), `exists in namespace "fleet": pass -n fleet`) {
			t.Fatalf("want ClusterNotFoundError for empty namespace pointing at fleet, got %v", err)
		}
	})
	t.Run("secret without value key", func(t *testing.T) {
		_, err := Get(ctx, c, "fleet", "orphan")
		if err == nil || !strings.Contains(err.Error(), `no "value" key`) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestWriteFileMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kc")
	if err := os.WriteFile(p, []byte("old content that is longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	b, _ := os.ReadFile(p)
	if st.Mode().Perm() != 0o600 || string(b) != "new" {
		t.Fatalf("mode %v content %q", st.Mode().Perm(), b)
	}
}
