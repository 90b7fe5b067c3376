package clusterinit_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	clusterinit "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

var shared *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

// writeConfig writes a clusterctl.yaml whose providers are the fixture repository's four Cluster
// API providers plus the tiny test provider, and whose cert-manager is the fixture CRDs.
func writeConfig(t *testing.T, fixtures string) string { return writeConfigTB(t, fixtures) }

func writeConfigTB(t testing.TB, fixtures string) string {
	t.Helper()
	dir := t.TempDir()
	repo := filepath.Join(fixtures, "repository")
	tiny, err := filepath.Abs("testdata/repository/infrastructure-tiny/latest/infrastructure-components.yaml")
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("overridesFolder: %s\ncert-manager:\n  url: %s\n  version: v1.21.1\n  timeout: 30s\nproviders:\n",
		filepath.Join(dir, "overrides"), filepath.Join(repo, "cert-manager", "v1.21.1", "cert-manager-crds.yaml"))
	for _, p := range []struct{ name, typ, url string }{
		{"cluster-api", "CoreProvider", filepath.Join(repo, "cluster-api", "latest", "core-components.yaml")},
		{"kubeadm", "BootstrapProvider", filepath.Join(repo, "bootstrap-kubeadm", "latest", "bootstrap-components.yaml")},
		{"kubeadm", "ControlPlaneProvider", filepath.Join(repo, "control-plane-kubeadm", "latest", "control-plane-components.yaml")},
		{"docker", "InfrastructureProvider", filepath.Join(repo, "infrastructure-docker", "latest", "infrastructure-components.yaml")},
		{"tiny", "InfrastructureProvider", tiny},
	} {
		body += fmt.Sprintf("- name: %s\n  type: %s\n  url: %s\n", p.name, p.typ, p.url)
	}
	path := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func clients(t *testing.T, cfgPath string, restCfg *rest.Config) clusterinit.Clients {
	return clientsTB(t, cfgPath, restCfg)
}

func clientsTB(t testing.TB, cfgPath string, restCfg *rest.Config) clusterinit.Clients {
	t.Helper()
	cfg, err := config.Load(context.Background(), config.Options{Path: cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := repository.New(cfg, repository.Options{CacheDir: "-", Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	cl := clusterinit.Clients{Repo: repo, Config: cfg}
	if restCfg != nil {
		// A new cluster client per run, as each capctl run has its own.
		cl.Cluster, err = cluster.NewForConfig(restCfg, cluster.Options{}, "", "envtest", "default")
		if err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

func needShared(t *testing.T) {
	t.Helper()
	testenv.Integration(t)
}

func TestParseRequests(t *testing.T) {
	r, err := clusterinit.ParseRequests(clusterinit.Selection{Core: "cluster-api:v1.14.0", Bootstrap: []string{"-"}, Infrastructure: []string{"docker:v1.14.0,aws", "tiny"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Items) != 4 || !r.OptOut[provider.BootstrapProviderType] || r.Items[1].Name != "docker" || r.Items[1].Version != "v1.14.0" {
		t.Errorf("%+v", r)
	}
	for sel, want := range map[*clusterinit.Selection]string{
		{Core: "-"}:    "can not be used for the core provider",
		{Core: "capi"}: `the core provider is "cluster-api"`,
		{Infrastructure: []string{"docker", "docker:v1.14.0"}}: "named twice",
		{Infrastructure: []string{"a:b:c"}}:                    "more than one ':'",
		{Bootstrap: []string{"kubeadm:"}}:                      "empty",
		{Infrastructure: []string{"Docker_X"}}:                 "invalid provider reference",
	} {
		if _, err := clusterinit.ParseRequests(*sel); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", *sel, err, want)
		}
	}
}

func TestRerunCommand(t *testing.T) {
	cp := clusterinit.Planned{Name: "kubeadm", Type: provider.ControlPlaneProviderType, Version: "v1.14.0"}
	docker := clusterinit.Planned{Name: "docker", Type: provider.InfrastructureProviderType, Version: "v1.14.0"}
	core := clusterinit.Planned{Name: "cluster-api", Type: provider.CoreProviderType, Version: "v1.14.0"}
	if got := clusterinit.RerunCommand([]clusterinit.Planned{cp, docker}, ""); got != "capctl init --control-plane kubeadm:v1.14.0 --infrastructure docker:v1.14.0" {
		t.Error(got)
	}
	// With the core still to install the re-run is a first run: opt out of the kubeadm default.
	if got := clusterinit.RerunCommand([]clusterinit.Planned{core, cp, docker}, "ns1"); got != "capctl init --core cluster-api:v1.14.0 --bootstrap - --control-plane kubeadm:v1.14.0 --infrastructure docker:v1.14.0 --target-namespace ns1" {
		t.Error(got)
	}
}

// TestInitLifecycle walks one management cluster through init's cases in order.
func TestInitLifecycle(t *testing.T) {
	needShared(t)
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	ctx := testenv.Context(t)
	c := shared.Client

	// Controllers stand-in: Deployments become available, webhook Services get endpoints, CA is
	// injected, the cert-manager probe's namespace is finalized.
	ctl := installtest.Start(ctx, c, installtest.Options{Interval: 250 * time.Millisecond, OnError: func(err error) { t.Logf("stand-in controllers: %v", err) }})
	defer func() { ctl.Stop() }()

	base := clusterinit.InitRequest{StrictChecks: true, WaitProviders: true, WaitProviderTimeout: time.Minute, WaitInterval: 100 * time.Millisecond}
	first := base
	first.Selection = clusterinit.Selection{Core: "cluster-api:v1.14.0", Infrastructure: []string{"docker:v1.14.0"}}

	t.Run("contract mismatch is refused before anything is installed", func(t *testing.T) {
		o := base
		o.Selection = clusterinit.Selection{Core: "cluster-api:v1.10.10", Bootstrap: []string{"kubeadm:v1.14.0"}, ControlPlane: []string{"kubeadm:v1.10.10"}}
		_, err := clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), o)
		if !errors.Is(err, clusterinit.ErrValidation) {
			t.Fatalf("want a validation error, got %v", err)
		}
		for _, want := range []string{
			"cluster-api v1.10.10 implements the v1beta1 contract; capctl installs v1beta2 core providers only",
			"bootstrap-kubeadm v1.14.0 implements the v1beta2 contract, while cluster-api v1.10.10 is compatible with v1beta1 providers only",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "capi-system"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("something was installed: %v", err)
		}
	})

	t.Run("dry run", func(t *testing.T) {
		o := first
		o.DryRun = true
		res, err := clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Providers) != 4 || res.CertManager.Action != certmanager.ActionWouldInstall {
			t.Fatalf("%+v %+v", res, res.CertManager)
		}
		for _, p := range res.Providers {
			if p.Action != clusterinit.ActionWouldInstall || p.Objects == 0 {
				t.Errorf("%+v", p)
			}
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "capi-system"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry run created capi-system: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: certmanager.CertificatesCRD}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry run installed cert-manager: %v", err)
		}
	})

	t.Run("first init of core, kubeadm and docker", func(t *testing.T) {
		var planned []clusterinit.Planned
		o := first
		o.OnPlan = func(p []clusterinit.Planned) { planned = p }
		res, err := clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), o)
		if err != nil {
			t.Fatal(err)
		}
		if !res.FirstRun || res.NoOp || !res.Waited || res.CertManager.Action != certmanager.ActionInstalled {
			t.Errorf("result %+v, cert-manager %+v", res, res.CertManager)
		}
		want := []string{"cluster-api v1.14.0 capi-system", "bootstrap-kubeadm v1.14.0 capi-kubeadm-bootstrap-system", "control-plane-kubeadm v1.14.0 capi-kubeadm-control-plane-system", "infrastructure-docker v1.14.0 capd-system"}
		if len(planned) != 4 {
			t.Fatalf("plan %+v", planned)
		}
		for i, p := range planned {
			if got := p.Label() + " " + p.Version + " " + p.Namespace; got != want[i] || p.Contract != "v1beta2" {
				t.Errorf("plan[%d] = %s (%s)", i, got, p.Contract)
			}
		}
		if !planned[1].Default || !planned[2].Default || planned[0].Default || planned[3].Default {
			t.Errorf("defaults: %+v", planned)
		}
		for _, p := range res.Providers {
			if p.Action != clusterinit.ActionInstalled {
				t.Errorf("%s: %s", p.Label(), p.Action)
			}
		}
		assertInstalled(t, c, "v1.14.0")
		// The inventory is what clusterctl writes.
		items, err := inventory.List(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, it := range items {
			got = append(got, fmt.Sprintf("%s/%s %s %s %s", it.Namespace, it.Name, it.ProviderName, it.Type, it.Version))
		}
		wantInv := "capi-system/cluster-api cluster-api CoreProvider v1.14.0, capi-kubeadm-bootstrap-system/bootstrap-kubeadm kubeadm BootstrapProvider v1.14.0, capi-kubeadm-control-plane-system/control-plane-kubeadm kubeadm ControlPlaneProvider v1.14.0, capd-system/infrastructure-docker docker InfrastructureProvider v1.14.0"
		if strings.Join(got, ", ") != wantInv {
			t.Errorf("inventory:\n%s\nwant\n%s", strings.Join(got, ", "), wantInv)
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(inventory.GVK)
		if err := c.Get(ctx, client.ObjectKey{Namespace: "capd-system", Name: "infrastructure-docker"}, u); err != nil {
			t.Fatal(err)
		}
		l := u.GetLabels()
		if v, ok := l[inventory.ClusterctlLabel]; !ok || v != "" || l[inventory.ProviderLabel] != "infrastructure-docker" || l[inventory.CoreLabel] != "inventory" {
			t.Errorf("inventory labels %v", l)
		}
		// cert-manager as clusterctl installs it.
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: certmanager.CertificatesCRD}, crd); err != nil {
			t.Fatal(err)
		}
		if crd.Labels[inventory.CoreLabel] != "cert-manager" || crd.Annotations[certmanager.VersionAnnotation] != "v1.21.1" {
			t.Errorf("cert-manager CRD labels %v annotations %v", crd.Labels, crd.Annotations)
		}
	})

	t.Run("identical re-run is a no-op", func(t *testing.T) {
		res, err := clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), first)
		if err != nil {
			t.Fatal(err)
		}
		if !res.NoOp || res.FirstRun || res.CertManager != nil {
			t.Errorf("%+v", res)
		}
		for _, p := range res.Providers {
			if p.Action != clusterinit.ActionAlreadyThere {
				t.Errorf("%s: %s", p.Label(), p.Action)
			}
		}
	})

	t.Run("another version points to upgrade", func(t *testing.T) {
		o := base
		o.Selection = clusterinit.Selection{Infrastructure: []string{"docker:v1.13.5"}}
		_, err := clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), o)
		if err == nil || !strings.Contains(err.Error(), "infrastructure-docker is already installed in namespace capd-system at version v1.14.0") || !strings.Contains(err.Error(), "capctl upgrade apply") {
			t.Errorf("%v", err)
		}
		o.Selection = clusterinit.Selection{Infrastructure: []string{"docker:v1.14.0"}}
		o.TargetNamespace = "elsewhere"
		_, err = clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), o)
		if err == nil || !strings.Contains(err.Error(), `there is already an instance of the "infrastructure-docker" provider installed in the "capd-system" namespace`) {
			t.Errorf("%v", err)
		}
	})

	t.Run("unknown provider and unknown version", func(t *testing.T) {
		o := base
		o.Selection = clusterinit.Selection{Infrastructure: []string{"dockr"}}
		_, err := clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), o)
		if err == nil || !strings.Contains(err.Error(), `unknown InfrastructureProvider "dockr"`) || !strings.Contains(err.Error(), "docker") {
			t.Errorf("%v", err)
		}
		o.Selection = clusterinit.Selection{Infrastructure: []string{"tiny:v0.9.0"}}
		_, err = clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), o)
		if err == nil || !strings.Contains(err.Error(), "has no version v0.9.0") {
			t.Errorf("%v", err)
		}
		o.Selection = clusterinit.Selection{Infrastructure: []string{"tiny:v0.0.1"}}
		_, err = clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), o)
		if err == nil || !strings.Contains(err.Error(), "v1alpha4") {
			t.Errorf("old contract: %v", err)
		}
	})

	t.Run("a component file with an unknown kind names kind and file", func(t *testing.T) {
		o := base
		o.Selection = clusterinit.Selection{Infrastructure: []string{"tiny:v0.3.0"}}
		_, err := clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), o)
		var uk *install.UnknownKindError
		if !errors.As(err, &uk) {
			t.Fatalf("want UnknownKindError, got %v", err)
		}
		for _, want := range []string{`"TinyGizmo"`, "infrastructure-tiny/v0.3.0/infrastructure-components.yaml", "nothing was applied"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "tiny-system"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("tiny-system was created: %v", err)
		}
	})

	t.Run("a second infrastructure provider later; its wait times out with reasons", func(t *testing.T) {
		// Nothing makes its Deployment ready this time.
		ctl.Stop()
		ctl = installtest.Start(ctx, c, installtest.Options{Interval: 250 * time.Millisecond, NotReady: true})
		o := base
		o.Selection = clusterinit.Selection{Infrastructure: []string{"tiny:v0.1.0"}}
		o.WaitProviderTimeout = time.Second
		res, err := clusterinit.InitWith(ctx, clients(t, cfgPath, shared.Config), o)
		var te *install.TimeoutError
		if !errors.As(err, &te) {
			t.Fatalf("want a timeout, got %v", err)
		}
		for _, want := range []string{
			"all providers are installed and recorded, but providers not ready after 1s",
			"Deployment tiny-system/tiny-controller-manager not available (0 of 1 replicas available); no pods exist for it",
			"webhook Service tiny-system/tiny-webhook-service has no ready endpoints",
			"CA not injected into ValidatingWebhookConfiguration tiny-validating-webhook-configuration (cert-manager.io/inject-ca-from: tiny-system/tiny-serving-cert)",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
		if res == nil || res.FirstRun || len(res.Providers) != 1 || res.Providers[0].Action != clusterinit.ActionInstalled {
			t.Fatalf("%+v", res)
		}
		items, err := inventory.List(ctx, c)
		if err != nil || len(items) != 5 {
			t.Fatalf("inventory %v %v", items, err)
		}
		if name := inventory.DefaultProviderName(items, provider.InfrastructureProviderType); name != "" {
			t.Errorf("two infrastructure providers, default %q", name)
		}
		// The kind it added to a group the Docker provider already uses is served and usable.
		tc := &unstructured.UnstructuredList{}
		tc.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1beta2")
		tc.SetKind("TinyClusterList")
		if err := c.List(ctx, tc); err != nil {
			t.Errorf("listing TinyClusters: %v", err)
		}
	})

	t.Run("list-images with the cluster", func(t *testing.T) {
		imgs, err := clusterinit.ListImagesWith(ctx, clients(t, cfgPath, shared.Config), clusterinit.ImagesRequest{Selection: clusterinit.Selection{Infrastructure: []string{"docker:v1.14.0", "tiny:v0.1.0"}}})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(imgs.Images, " ") != "gcr.io/k8s-staging-cluster-api/capd-manager:v1.14.0 registry.example/tiny-controller:v0.1.0" || imgs.NoCluster {
			t.Errorf("%+v", imgs)
		}
	})
}

// assertInstalled checks the objects of core, kubeadm bootstrap/control plane and docker.
func assertInstalled(t *testing.T, c client.Client, version string) {
	t.Helper()
	ctx := context.Background()
	for label, n := range map[string]int{"cluster-api": 13, "bootstrap-kubeadm": 2, "control-plane-kubeadm": 2, "infrastructure-docker": 12} {
		crds := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := c.List(ctx, crds, client.MatchingLabels{inventory.ProviderLabel: label, inventory.ClusterctlLabel: ""}); err != nil {
			t.Fatal(err)
		}
		if len(crds.Items) != n {
			t.Errorf("%s: %d labelled CRDs, want %d", label, len(crds.Items), n)
		}
		for _, crd := range crds.Items {
			ok := false
			for _, cond := range crd.Status.Conditions {
				ok = ok || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
			}
			if !ok {
				t.Errorf("CRD %s not established", crd.Name)
			}
		}
	}
	for ns, prefix := range map[string]string{"capi-system": "capi", "capi-kubeadm-bootstrap-system": "capi-kubeadm-bootstrap", "capi-kubeadm-control-plane-system": "capi-kubeadm-control-plane", "capd-system": "capd"} {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: prefix + "-controller-manager"}, d); err != nil {
			t.Errorf("Deployment: %v", err)
			continue
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+version) {
			t.Errorf("%s image %s", d.Name, img)
		}
		if d.Labels[inventory.ClusterctlLabel] != "" || d.Labels[inventory.ProviderLabel] == "" {
			t.Errorf("%s labels %v", d.Name, d.Labels)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: prefix + "-webhook-service"}, &corev1.Service{}); err != nil {
			t.Errorf("Service: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: prefix + "-manager"}, &corev1.ServiceAccount{}); err != nil {
			t.Errorf("ServiceAccount: %v", err)
		}
		crb := &rbacv1.ClusterRoleBinding{}
		if err := c.Get(ctx, client.ObjectKey{Name: prefix + "-manager-rolebinding"}, crb); err != nil {
			t.Errorf("ClusterRoleBinding: %v", err)
		} else if crb.Subjects[0].Namespace != ns {
			t.Errorf("%s subject namespace %s", crb.Name, crb.Subjects[0].Namespace)
		}
		vwc := &unstructured.Unstructured{}
		vwc.SetAPIVersion("admissionregistration.k8s.io/v1")
		vwc.SetKind("ValidatingWebhookConfiguration")
		if err := c.Get(ctx, client.ObjectKey{Name: prefix + "-validating-webhook-configuration"}, vwc); err != nil {
			t.Errorf("webhook configuration: %v", err)
		} else {
			hooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
			svcNS, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "service", "namespace")
			if svcNS != ns {
				t.Errorf("%s points at namespace %s", vwc.GetName(), svcNS)
			}
		}
		cert := &unstructured.Unstructured{}
		cert.SetAPIVersion("cert-manager.io/v1")
		cert.SetKind("Certificate")
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: prefix + "-serving-cert"}, cert); err != nil {
			t.Errorf("Certificate: %v", err)
		}
	}
}

// TestInitOlderVersionWhenTheServerGoesAway installs v1.13.5 through a proxy that is cut while the
// bootstrap provider's objects are being applied; the error says what is there and how to
// complete it, and running that completes the installation. All providers are installed as one
// (every Namespace, every CRD, then the rest), so when the cut comes every provider has objects
// applied and none is recorded yet.
func TestInitOlderVersionWhenTheServerGoesAway(t *testing.T) {
	testenv.Integration(t)
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	ctl := installtest.Start(ctx, env.Client, installtest.Options{Interval: 250 * time.Millisecond})
	defer ctl.Stop()

	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := installtest.NewProxy(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Cut()
	viaProxy := rest.CopyConfig(env.Config)
	viaProxy.Host = "https://" + proxy.Addr
	viaProxy.TLSClientConfig.ServerName = u.Hostname()

	o := clusterinit.InitRequest{StrictChecks: true, WaitProviders: true, WaitProviderTimeout: time.Minute, WaitInterval: 100 * time.Millisecond,
		Selection: clusterinit.Selection{Core: "cluster-api:v1.13.5", Bootstrap: []string{"kubeadm:v1.13.5"}, ControlPlane: []string{"kubeadm:v1.13.5"}, Infrastructure: []string{"docker:v1.13.5"}}}
	o.OnApplied = func(p clusterinit.Planned, ref install.ObjectRef, done, total int) {
		if p.Type == provider.BootstrapProviderType && done == 5 {
			proxy.Cut()
		}
	}
	_, err = clusterinit.InitWith(ctx, clients(t, cfgPath, viaProxy), o)
	var ie *clusterinit.IncompleteError
	if !errors.As(err, &ie) {
		t.Fatalf("want IncompleteError, got %v", err)
	}
	msg := err.Error()
	// Objects of one level are applied concurrently: those already sent when the server went
	// away may still have landed, so at least the 5 seen before the cut are reported applied,
	// and never all of them; the message gives the same count.
	var se *install.SetsError
	if !errors.As(err, &se) {
		t.Fatalf("want an install.SetsError inside, got %v", err)
	}
	var bootstrap *install.SetProgress
	for k := range se.Sets {
		if strings.HasPrefix(se.Sets[k].Source, "bootstrap-kubeadm v1.13.5") {
			bootstrap = &se.Sets[k]
		}
	}
	if bootstrap == nil {
		t.Fatalf("no bootstrap-kubeadm set in %+v", se.Sets)
	}
	applied, total := len(bootstrap.Applied), len(bootstrap.Applied)+len(bootstrap.Pending)
	if applied < 5 || applied >= total || bootstrap.Done {
		t.Errorf("bootstrap-kubeadm: %d of %d objects applied (done %v); want at least the 5 seen before the cut and fewer than all", applied, total, bootstrap.Done)
	}
	if !regexp.MustCompile(fmt.Sprintf(`bootstrap-kubeadm v1\.13\.5 \([^)]*\)(: |\) failed: .*?; )%d of %d objects`, applied, total)).MatchString(msg) {
		t.Errorf("error does not say that %d of %d bootstrap-kubeadm objects were applied:\n%s", applied, total, msg)
	}
	for _, want := range []string{
		"Partly applied (not recorded): cluster-api v1.13.5, bootstrap-kubeadm v1.13.5, control-plane-kubeadm v1.13.5, infrastructure-docker v1.13.5.",
		"capctl init --core cluster-api:v1.13.5 --bootstrap kubeadm:v1.13.5 --control-plane kubeadm:v1.13.5 --infrastructure docker:v1.13.5",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "Installed and recorded") || strings.Contains(msg, "Not started") {
		t.Errorf("no provider can be recorded or untouched after a cut in the middle of the install:\n%s", msg)
	}
	if items, err := inventory.List(ctx, env.Client); len(items) != 0 || (err != nil && !errors.Is(err, inventory.ErrNoInventory)) {
		t.Fatalf("inventory after the failure: %v %v", items, err)
	}

	// Server back; run what the error said.
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	o.OnApplied = nil
	res, err := clusterinit.InitWith(ctx, clients(t, cfgPath, viaProxy), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.FirstRun || len(res.Providers) != 4 || !res.Waited {
		t.Errorf("%+v", res)
	}
	assertInstalled(t, env.Client, "v1.13.5")
	items, err := inventory.List(ctx, env.Client)
	if err != nil || len(items) != 4 {
		t.Fatalf("inventory: %v %v", items, err)
	}
	for _, it := range items {
		if it.Version != "v1.13.5" {
			t.Errorf("%s at %s", it.Name, it.Version)
		}
	}
}

func TestListImagesWithoutACluster(t *testing.T) {
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	imgs, err := clusterinit.ListImagesWith(context.Background(), clients(t, cfgPath, nil), clusterinit.ImagesRequest{
		Selection: clusterinit.Selection{Core: "cluster-api:v1.14.0", Bootstrap: []string{"kubeadm:v1.14.0"}, ControlPlane: []string{"kubeadm:v1.14.0"}, Infrastructure: []string{"docker:v1.14.0"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "gcr.io/k8s-staging-cluster-api/capd-manager:v1.14.0 registry.k8s.io/cluster-api/cluster-api-controller:v1.14.0 registry.k8s.io/cluster-api/kubeadm-bootstrap-controller:v1.14.0 registry.k8s.io/cluster-api/kubeadm-control-plane-controller:v1.14.0"
	if got := strings.Join(imgs.Images, " "); got != want || !imgs.NoCluster || !imgs.CertManagerIncluded {
		t.Errorf("got %s\n%+v", got, imgs)
	}
	if _, ok := imgs.ByComponent["cert-manager"]; !ok {
		t.Errorf("cert-manager not consulted: %+v", imgs.ByComponent)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
