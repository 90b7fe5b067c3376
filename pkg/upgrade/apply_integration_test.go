package upgrade

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// zeroScaledStatus plays the Deployment controller for scaled-down Deployments (envtest runs no
// controllers): status.replicas follows spec.replicas = 0. It also lets the stand-in cainjector
// of installtest see re-applied CRDs again.
func zeroScaledStatus(ctx context.Context, c client.Client, caPEM []byte) {
	for {
		list := &appsv1.DeploymentList{}
		if err := c.List(ctx, list); err == nil {
			for i := range list.Items {
				d := &list.Items[i]
				if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 && d.Status.Replicas != 0 {
					d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation}
					_ = c.Status().Update(ctx, d)
				}
			}
		}
		// The API server checks that a CRD's caBundle is a PEM certificate, which the stand-in
		// cainjector of installtest does not write: inject a real one into the CRDs.
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := c.List(ctx, crds); err == nil {
			for i := range crds.Items {
				crd := &crds.Items[i]
				conv := crd.Spec.Conversion
				if crd.Annotations["cert-manager.io/inject-ca-from"] != "" && conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig != nil && len(conv.Webhook.ClientConfig.CABundle) == 0 {
					patch := fmt.Sprintf(`{"metadata":{"labels":{"installtest.capctl.io/ca-injected":"true"}},"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":%q}}}}}`, base64.StdEncoding.EncodeToString(caPEM))
					_ = c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, []byte(patch)))
				}
			}
		}
		if cluster.Sleep(ctx, 200*time.Millisecond) != nil {
			return
		}
	}
}

// createSoon creates obj, retrying while discovery has not caught up with its freshly
// Established CRD.
func createSoon(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	for i := 0; ; i++ {
		err := c.Create(context.Background(), obj)
		if err == nil {
			return
		}
		if !meta.IsNoMatchError(err) || i == 100 {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// selfSignedPEM is a throwaway CA certificate.
func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "upgrade-test-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func deleteWebhookConfigurations(t *testing.T, c client.Client) {
	t.Helper()
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("admissionregistration.k8s.io/v1")
		u.SetKind(kind)
		if err := c.DeleteAllOf(context.Background(), u, client.HasLabels{inventory.ProviderLabel}); err != nil {
			t.Fatalf("deleting %ss: %v", kind, err)
		}
	}
}

func deploymentImage(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatalf("Deployment %s/%s: %v", ns, name, err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

func TestApplyOnAPIServer(t *testing.T) {
	testenv.Integration(t)
	fixtures := testenv.FixturesDir(t)
	env := testenv.Start(t, testenv.Options{CRDPaths: []string{filepath.Join(fixtures, "repository", "cert-manager", "v1.21.1", "cert-manager-crds.yaml")}})
	ctx := testenv.Context(t)
	c := env.Client
	cat := repoCatalog(t, filepath.Join(fixtures, "repository"), capiLabels...)

	// Install v1.13.4 of the core and the docker provider, as init does.
	installed := []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, "v1.13.4", "capi-system"),
		inventory.New("docker", provider.InfrastructureProviderType, "v1.13.4", "capd-system"),
	}
	if err := inventory.EnsureCRD(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, p := range installed {
		objs, err := cat.Components(ctx, p, p.Version, p.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := install.Apply(ctx, c, objs, install.ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := inventory.Write(ctx, c, p); err != nil {
			t.Fatal(err)
		}
	}
	// No webhook pods in envtest: remove the webhook configurations to create a Cluster.
	deleteWebhookConfigurations(t, c)
	cl := &unstructured.Unstructured{}
	cl.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	cl.SetKind("Cluster")
	cl.SetNamespace("default")
	cl.SetName("workload")
	cl.Object["spec"] = map[string]any{"paused": true}
	createSoon(t, c, cl)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "clusters.cluster.x-k8s.io"}, crd); err != nil {
		t.Fatal(err)
	}
	crdUID := crd.UID
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: "capi-system"}, ns); err != nil {
		t.Fatal(err)
	}
	nsUID := ns.UID

	// A user tuned the running core controller.
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}, dep); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Template.Spec.Containers[0].Args = append(dep.Spec.Template.Spec.Containers[0].Args, "--kube-api-qps=100")
	dep.Spec.Template.Spec.Containers[0].Env = append(dep.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://proxy:3128"})
	if err := c.Update(ctx, dep); err != nil {
		t.Fatal(err)
	}

	ctlCtx, stop := context.WithCancel(ctx)
	defer stop()
	go zeroScaledStatus(ctlCtx, c, selfSignedPEM(t))
	stand := installtest.Start(ctlCtx, c, installtest.Options{})
	defer stand.Stop()

	t.Run("plan", func(t *testing.T) {
		before := c.Requests()
		plan, err := Plan(ctx, c, cat)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("provider plan: %d API requests", c.Requests()-before)
		if len(plan.Contracts) != 1 || !plan.Contracts[0].Applicable() || plan.Contracts[0].Providers[0].NextVersion != "v1.14.0" {
			t.Fatalf("plan %+v", plan)
		}
	})

	t.Run("dry run changes nothing", func(t *testing.T) {
		res, err := apply(ctx, c, cat, Request{Contract: "v1beta2"}, ApplyOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if !res.DryRun || len(res.Providers) != 2 || len(res.Providers[0].Deleted) == 0 || len(res.Providers[0].Applied)+len(res.Providers[0].Unchecked) == 0 {
			t.Fatalf("result %+v", res)
		}
		items, _ := inventory.List(ctx, c)
		if items[0].Version != "v1.13.4" || !strings.HasSuffix(deploymentImage(t, c, "capi-system", "capi-controller-manager"), ":v1.13.4") {
			t.Errorf("dry run changed the cluster: %+v", items)
		}
		if len(res.Warnings) != 2 {
			t.Errorf("warnings %+v", res.Warnings)
		}
	})

	t.Run("a user who may not delete ClusterRoles is refused before the first change", func(t *testing.T) {
		// Without the preflight the old controllers were scaled down and their components
		// deleted before the first refused delete.
		env.GrantAllBut(t, "no-clusterrole-delete", map[string][]string{"clusterroles.rbac.authorization.k8s.io": {"delete"}})
		operator := env.User(t, "no-clusterrole-delete")
		replicas := func() int32 {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "capi-system", Name: "capi-controller-manager"}, d); err != nil {
				t.Fatal(err)
			}
			return *d.Spec.Replicas
		}
		was := replicas()
		_, err := apply(ctx, operator, cat, Request{Contract: "v1beta2"}, ApplyOptions{})
		var perr *authz.PreflightError
		if !errors.As(err, &perr) {
			t.Fatalf("want a permission refusal, got %v", err)
		}
		want := []authz.Permission{{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "delete"}}
		if got := perr.Missing(); !reflect.DeepEqual(got, want) {
			t.Errorf("missing: got %v, want %v", got, want)
		}
		items, _ := inventory.List(ctx, c)
		if items[0].Version != "v1.13.4" || replicas() != was || !strings.HasSuffix(deploymentImage(t, c, "capi-system", "capi-controller-manager"), ":v1.13.4") {
			t.Errorf("the refused upgrade changed the cluster: %+v, replicas %d (was %d)", items, replicas(), was)
		}
	})

	t.Run("a user who cannot list Roles nor ConfigMaps is refused before the first change", func(t *testing.T) {
		// The old components are deleted from a listing: a kind left out of it would stay behind
		// with no inventory entry recording it.
		env.GrantAllBut(t, "no-role-list", map[string][]string{"roles.rbac.authorization.k8s.io": {"list"}, "configmaps": {"list"}})
		operator := env.User(t, "no-role-list")
		_, err := apply(ctx, operator, cat, Request{Contract: "v1beta2"}, ApplyOptions{})
		if !authz.IsIncomplete(err) {
			t.Fatalf("want the refusal of an incomplete view, got %v", err)
		}
		for _, want := range []string{"capctl upgrade apply refuses to act on an incomplete view", "roles.rbac.authorization.k8s.io (list in namespace capi-system", "configmaps (list in namespace capi-system", "kind: Role", "Nothing was changed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal lacks %q:\n%v", want, err)
			}
		}
		items, _ := inventory.List(ctx, c)
		if items[0].Version != "v1.13.4" || !strings.HasSuffix(deploymentImage(t, c, "capi-system", "capi-controller-manager"), ":v1.13.4") {
			t.Errorf("the refused upgrade changed the cluster: %+v", items)
		}
	})

	t.Run("patch upgrade with explicit versions", func(t *testing.T) {
		res, err := apply(ctx, c, cat, Request{Providers: []Requested{
			req(provider.CoreProviderType, "capi-system/cluster-api:v1.13.5"),
			req(provider.InfrastructureProviderType, "docker:v1.13.5"),
		}}, ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var warned []string
		for _, w := range res.Warnings {
			warned = append(warned, w.What+" "+w.Value)
		}
		if strings.Join(warned, ",") != "arg --kube-api-qps=100,env HTTPS_PROXY=http://proxy:3128" {
			t.Errorf("warnings %v", warned)
		}
		if img := deploymentImage(t, c, "capi-system", "capi-controller-manager"); !strings.HasSuffix(img, ":v1.13.5") {
			t.Errorf("core image %s", img)
		}
		if img := deploymentImage(t, c, "capd-system", "capd-controller-manager"); !strings.HasSuffix(img, ":v1.13.5") {
			t.Errorf("docker image %s", img)
		}
		items, _ := inventory.List(ctx, c)
		if items[0].Version != "v1.13.5" || items[1].Version != "v1.13.5" {
			t.Errorf("inventory %+v", items)
		}
	})

	t.Run("minor upgrade by contract, waiting for the providers", func(t *testing.T) {
		before, start := c.Requests(), time.Now()
		res, err := apply(ctx, c, cat, Request{Contract: "v1beta2"}, ApplyOptions{WaitProviders: true, WaitTimeout: 2 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("upgrade of 2 providers to v1.14.0: %d API requests, %s (shared machine; a figure, not an assertion)", c.Requests()-before, time.Since(start).Round(time.Millisecond))
		if len(res.Providers) != 2 || res.Providers[0].To != "v1.14.0" || len(res.Warnings) != 0 {
			t.Fatalf("result %+v", res)
		}
		if img := deploymentImage(t, c, "capi-system", "capi-controller-manager"); !strings.HasSuffix(img, ":v1.14.0") {
			t.Errorf("core image %s", img)
		}
		items, _ := inventory.List(ctx, c)
		for _, p := range items {
			if p.Version != "v1.14.0" {
				t.Errorf("inventory %+v", p)
			}
		}
		// CRDs and namespaces kept (same objects), workload objects still readable.
		if err := c.Get(ctx, client.ObjectKey{Name: "clusters.cluster.x-k8s.io"}, crd); err != nil || crd.UID != crdUID {
			t.Errorf("Cluster CRD replaced or gone: %v", err)
		}
		if crd.Labels[inventory.ProviderLabel] != "cluster-api" {
			t.Errorf("CRD labels %v", crd.Labels)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "capi-system"}, ns); err != nil || ns.UID != nsUID {
			t.Errorf("namespace replaced or gone: %v", err)
		}
		got := &unstructured.Unstructured{}
		got.SetAPIVersion("cluster.x-k8s.io/v1beta2")
		got.SetKind("Cluster")
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "workload"}, got); err != nil {
			t.Errorf("Cluster not readable after the upgrade: %v", err)
		}
	})

	t.Run("up to date", func(t *testing.T) {
		plan, err := Plan(ctx, c, cat)
		if err != nil || !plan.Contracts[0].UpToDate() {
			t.Fatalf("plan %+v %v", plan, err)
		}
		if _, err := apply(ctx, c, cat, Request{Contract: "v1beta2"}, ApplyOptions{}); !errors.Is(err, ErrNothingToUpgrade) {
			t.Errorf("apply when up to date: %v", err)
		}
	})

	t.Run("cert-manager upgrade with storage migration", func(t *testing.T) {
		// cert-manager v1.20.3 as clusterctl installs it (labels, version annotation).
		data, err := os.ReadFile(filepath.Join(fixtures, "repository", "cert-manager", "v1.20.3", "cert-manager-crds.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := installtest.ParseYAML(data)
		if err != nil {
			t.Fatal(err)
		}
		certmanager.Prepare(objs, "v1.20.3")
		if _, err := install.Apply(ctx, c, objs, install.ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
		// A cert-manager-owned kind with objects stored in an old version.
		gadgets, err := installtest.ReadYAML("testdata/migration-crd.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := install.Apply(ctx, c, gadgets, install.ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
		g := &unstructured.Unstructured{}
		g.SetAPIVersion("acme.cert-manager.io/v1alpha1")
		g.SetKind("Gadget")
		g.SetNamespace("default")
		g.SetName("old")
		g.Object["spec"] = map[string]any{"size": int64(3)}
		createSoon(t, c, g)
		gcrd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: "gadgets.acme.cert-manager.io"}, gcrd); err != nil {
			t.Fatal(err)
		}
		gcrd.Status.StoredVersions = []string{"v1alpha1", "v1"}
		if err := c.Status().Update(ctx, gcrd); err != nil {
			t.Fatal(err)
		}

		plan, err := Plan(ctx, c, cat)
		if err != nil {
			t.Fatal(err)
		}
		if plan.CertManager == nil || !plan.CertManager.ShouldUpgrade || plan.CertManager.From != "v1.20.3" || plan.CertManager.To != "v1.21.1" {
			t.Fatalf("cert-manager plan %+v", plan.CertManager)
		}
		res, err := apply(ctx, c, cat, Request{Contract: "v1beta2"}, ApplyOptions{CertManagerTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if res.CertManager == nil || len(res.Providers) != 0 {
			t.Errorf("result %+v", res)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: "certificates.cert-manager.io"}, crd); err != nil || crd.Annotations[certmanager.VersionAnnotation] != "v1.21.1" {
			t.Errorf("certificates CRD not upgraded: %v %v", err, crd.Annotations)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "gadgets.acme.cert-manager.io"}, gcrd); err != nil || strings.Join(gcrd.Status.StoredVersions, ",") != "v1" {
			t.Errorf("stored versions not migrated: %v %v", err, gcrd.Status.StoredVersions)
		}
		g.SetAPIVersion("acme.cert-manager.io/v1")
		if err := c.Get(ctx, client.ObjectKeyFromObject(g), g); err != nil {
			t.Errorf("migrated object not readable: %v", err)
		}
		// The test's extra CRD is not part of cert-manager v1.21.1: remove it before re-planning
		// (an object count that differs from the configured components means "upgrade").
		if err := c.Delete(ctx, gcrd); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100 && c.Get(ctx, client.ObjectKeyFromObject(gcrd), gcrd) == nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		plan, err = Plan(ctx, c, cat)
		if err != nil || plan.CertManager == nil || plan.CertManager.ShouldUpgrade {
			t.Errorf("after the upgrade: %+v %v", plan, err)
		}
	})

	t.Run("bad input changes nothing", func(t *testing.T) {
		for _, r := range []Request{
			{Providers: []Requested{req(provider.CoreProviderType, "cluster-api:v1.13.5")}},
			{Providers: []Requested{req(provider.CoreProviderType, "cluster-api:v1.14.9")}},
		} {
			if _, err := apply(ctx, c, cat, r, ApplyOptions{}); err == nil {
				t.Errorf("%+v accepted", r)
			}
		}
		if img := deploymentImage(t, c, "capi-system", "capi-controller-manager"); !strings.HasSuffix(img, ":v1.14.0") {
			t.Errorf("core image %s", img)
		}
	})
}
