package clusterinit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/cluster"
	clusterinit "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

// floorProviders are the providers of the side-by-side init, as name, type and version.
var floorProviders = []struct {
	name    string
	typ     provider.Type
	version string
}{
	{"cluster-api", provider.CoreProviderType, "v1.14.0"},
	{"kubeadm", provider.BootstrapProviderType, "v1.14.0"},
	{"kubeadm", provider.ControlPlaneProviderType, "v1.14.0"},
	{"docker", provider.InfrastructureProviderType, "v1.14.0"},
}

// initObjects are the objects the side-by-side init writes, processed as init processes them:
// the configured cert-manager file's objects with their labels, each provider's components
// (variables substituted, moved into their namespace, labelled), the inventory CRD and one
// inventory entry per provider. Reading and processing them is not part of the floor.
func initObjects(tb testing.TB, cl clusterinit.Clients) []unstructured.Unstructured {
	tb.Helper()
	ctx := context.Background()
	cm, err := certmanager.Fetch(ctx, cl.Repo, "")
	if err != nil {
		tb.Fatal(err)
	}
	certmanager.Prepare(cm.Objects, cm.Version)
	objs := append([]unstructured.Unstructured{}, cm.Objects...)
	crd, err := inventory.CRD()
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		tb.Fatal(err)
	}
	u := unstructured.Unstructured{Object: raw}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	objs = append(objs, u)
	for _, fp := range floorProviders {
		p, err := cl.Repo.Provider(fp.name, fp.typ)
		if err != nil {
			tb.Fatal(err)
		}
		comps, err := cl.Repo.Components(ctx, p, repository.ComponentsOptions{Version: fp.version})
		if err != nil {
			tb.Fatal(err)
		}
		objs = append(objs, comps.Objects...)
		objs = append(objs, *inventory.New(fp.name, fp.typ, fp.version, comps.TargetNamespace).ToUnstructured())
	}
	return objs
}

// floorApply is init's floor: the same objects written by the fastest writer that needs no
// knowledge of their order. Every object is sent at once by server-side apply (64 in flight);
// one the server refuses only because its namespace or its kind is not there yet is sent again
// in the next round, 20 ms later. What is left is the API server's own work of storing the
// objects and serving their CRDs. It returns the number of rounds.
func floorApply(ctx context.Context, c *cluster.Client, objs []unstructured.Unstructured) (int, error) {
	pending := objs
	deadline := time.Now().Add(5 * time.Minute)
	for round := 1; ; round++ {
		again := make([]bool, len(pending))
		var g errgroup.Group
		g.SetLimit(64)
		for i := range pending {
			g.Go(func() error {
				obj := pending[i].DeepCopy()
				err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("floor"), client.ForceOwnership)
				switch {
				case err == nil:
				case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
					again[i] = true
				default:
					return fmt.Errorf("%s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return round, err
		}
		var next []unstructured.Unstructured
		for i, a := range again {
			if a {
				next = append(next, pending[i])
			}
		}
		if len(next) == 0 {
			return round, nil
		}
		if time.Now().After(deadline) {
			return round, fmt.Errorf("%d objects still refused after %d rounds, the first %s %s", len(next), round, next[0].GetKind(), next[0].GetName())
		}
		pending = next
		if err := cluster.Sleep(ctx, 20*time.Millisecond); err != nil {
			return round, err
		}
	}
}
