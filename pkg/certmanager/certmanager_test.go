package certmanager_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

func fixtureComponents(t *testing.T, version string) *certmanager.Components {
	t.Helper()
	path := filepath.Join(testenv.FixturesDir(t), "repository", "cert-manager", version, "cert-manager-crds.yaml")
	objs, err := installtest.ReadYAML(path)
	if err != nil {
		t.Fatal(err)
	}
	return &certmanager.Components{Version: version, URL: path, Objects: objs}
}

// TestLifecycle walks one API server through cert-manager's states in order: absent, installed by
// capctl, working (skip), broken (wait times out with reasons), someone else's (refused), fixed.
func TestLifecycle(t *testing.T) {
	testenv.Integration(t)
	ctx := testenv.Context(t)
	c, err := cluster.NewForConfig(env.Config, cluster.Options{}, env.Kubeconfig, "envtest", "default")
	if err != nil {
		t.Fatal(err)
	}
	// kube-controller-manager's namespace finalizer, for the probe's deleted namespace; nothing else.
	ctl := installtest.Start(ctx, c, installtest.Options{Interval: 100 * time.Millisecond, NotReady: true, FinalizeNamespaces: []string{certmanager.TestNamespace}})
	defer ctl.Stop()
	waitNamespaceGone := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			ns := &unstructured.Unstructured{}
			ns.SetAPIVersion("v1")
			ns.SetKind("Namespace")
			if err := c.Get(ctx, client.ObjectKey{Name: certmanager.TestNamespace}, ns); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("probe namespace never went away")
	}

	// 1. Nothing installed: the probe says so.
	err = certmanager.Probe(ctx, c)
	if err == nil || !strings.Contains(err.Error(), "cert-manager is not installed") {
		t.Fatalf("probe on an empty cluster: %v", err)
	}
	waitNamespaceGone()

	// 2. Ensure installs the configured version, labelled as clusterctl labels it.
	fetched := 0
	opts := certmanager.Options{
		Config: config.CertManager{Version: "v1.21.1", Timeout: 30 * time.Second},
		Fetch: func(context.Context) (*certmanager.Components, error) {
			fetched++
			return fixtureComponents(t, "v1.21.1"), nil
		},
		WaitInterval: 100 * time.Millisecond,
	}
	res, err := certmanager.Ensure(ctx, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != certmanager.ActionInstalled || res.Version != "v1.21.1" || res.Applied != 6 {
		t.Fatalf("result %+v", res)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: certmanager.CertificatesCRD}, crd); err != nil {
		t.Fatal(err)
	}
	if crd.Labels[inventory.CoreLabel] != "cert-manager" || crd.Labels[inventory.ClusterctlLabel] != "" || crd.Annotations[certmanager.VersionAnnotation] != "v1.21.1" {
		t.Errorf("labels %v annotations %v", crd.Labels, crd.Annotations)
	}
	own, err := certmanager.Owner(ctx, c)
	if err != nil || !own.Managed || own.Foreign || own.Version != "v1.21.1" {
		t.Errorf("owner %+v %v", own, err)
	}
	waitNamespaceGone()

	// 3. Working: skipped without fetching anything.
	res, err = certmanager.Ensure(ctx, c, opts)
	if err != nil || res.Action != certmanager.ActionAlreadyWorking || fetched != 1 {
		t.Fatalf("second ensure: %+v %v (fetched %d)", res, err, fetched)
	}
	waitNamespaceGone()

	// 4. Upgrade decisions.
	same := fixtureComponents(t, "v1.21.1")
	certmanager.Prepare(same.Objects, same.Version)
	plan, err := certmanager.PlanUpgrade(ctx, c, same)
	if err != nil || plan.ShouldUpgrade || plan.ExternallyManaged || plan.From != "v1.21.1" {
		t.Errorf("same version: %+v %v", plan, err)
	}
	newer := fixtureComponents(t, "v1.21.1")
	newer.Version = "v1.22.0"
	if plan, err = certmanager.PlanUpgrade(ctx, c, newer); err != nil || !plan.ShouldUpgrade || plan.From != "v1.21.1" || plan.To != "v1.22.0" {
		t.Errorf("newer configured: %+v %v", plan, err)
	}
	older := fixtureComponents(t, "v1.20.3")
	if plan, err = certmanager.PlanUpgrade(ctx, c, older); err != nil || plan.ShouldUpgrade {
		t.Errorf("older configured: %+v %v", plan, err)
	}
	fewer := fixtureComponents(t, "v1.21.1")
	fewer.Objects = fewer.Objects[:5]
	if plan, err = certmanager.PlanUpgrade(ctx, c, fewer); err != nil || !plan.ShouldUpgrade || !strings.Contains(plan.Reason, "6 objects installed and 5 configured") {
		t.Errorf("object count differs: %+v %v", plan, err)
	}
	// An object without the version annotation counts as v0.11.0.
	patch := []byte(`{"metadata":{"annotations":{"` + certmanager.VersionAnnotation + `":null}}}`)
	if err := c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	if plan, err = certmanager.PlanUpgrade(ctx, c, same); err != nil || !plan.ShouldUpgrade || plan.From != "v0.11.0" {
		t.Errorf("missing annotation: %+v %v", plan, err)
	}

	// 5. Broken: its webhook is registered but nothing serves it. Ensure re-applies (it is ours)
	// and the wait times out saying why.
	hook, err := installtest.ReadYAML("testdata/webhook.yaml")
	if err != nil {
		t.Fatal(err)
	}
	certmanager.Prepare(hook, "v1.21.1")
	if _, err := install.Apply(ctx, c, hook, install.ApplyOptions{Source: "testdata/webhook.yaml"}); err != nil {
		t.Fatal(err)
	}
	err = certmanager.Probe(ctx, c)
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("probe with a dead webhook: %v", err)
	}
	waitNamespaceGone()
	brokenOpts := opts
	brokenOpts.Config.Timeout = 500 * time.Millisecond
	brokenOpts.Fetch = func(context.Context) (*certmanager.Components, error) {
		cm := fixtureComponents(t, "v1.21.1")
		cm.Objects = append(cm.Objects, hook...)
		return cm, nil
	}
	_, err = certmanager.Ensure(ctx, c, brokenOpts)
	var we *certmanager.WaitError
	if !errors.As(err, &we) {
		t.Fatalf("want WaitError, got %v", err)
	}
	for _, want := range []string{
		"cert-manager v1.21.1 was installed but did not become available within 500ms",
		"failed calling webhook",
		"Deployment cert-manager/cert-manager-webhook not available (0 of 1 replicas available); no pods exist for it",
		"webhook Service cert-manager/cert-manager-webhook has no ready endpoints (used by ValidatingWebhookConfiguration cert-manager-webhook)",
		"CA not injected into ValidatingWebhookConfiguration cert-manager-webhook (cert-manager.io/inject-ca-from-secret: cert-manager/cert-manager-webhook-ca)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	waitNamespaceGone()

	// 6. Someone else's broken cert-manager: capctl does not install over it.
	for _, u := range append(fixtureComponents(t, "v1.21.1").Objects, hook...) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(u.GroupVersionKind())
		obj.SetName(u.GetName())
		obj.SetNamespace(u.GetNamespace())
		p := []byte(`{"metadata":{"labels":{"` + inventory.CoreLabel + `":null,"` + inventory.ClusterctlLabel + `":null}}}`)
		if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, p)); err != nil {
			t.Fatal(err)
		}
	}
	fetched = 0
	_, err = certmanager.Ensure(ctx, c, opts)
	if err == nil || !strings.Contains(err.Error(), "capctl will not install a second copy over it") || fetched != 0 {
		t.Errorf("foreign broken cert-manager: %v (fetched %d)", err, fetched)
	}
	waitNamespaceGone()
	ext := opts
	ext.Config.ExternallyProvisioned = true
	ext.Config.Timeout = 300 * time.Millisecond
	_, err = certmanager.Ensure(ctx, c, ext)
	if err == nil || !strings.Contains(err.Error(), "externally provisioned") || !strings.Contains(err.Error(), "did not become available within 300ms") || fetched != 0 {
		t.Errorf("externally provisioned, broken: %v", err)
	}
	if plan, err = certmanager.PlanUpgrade(ctx, c, same); err != nil || !plan.ExternallyManaged || plan.ShouldUpgrade {
		t.Errorf("foreign plan: %+v %v", plan, err)
	}
	waitNamespaceGone()

	// 7. Its webhook fixed (here: gone): working again, nothing installed.
	for _, u := range hook {
		if u.GetKind() == "ValidatingWebhookConfiguration" {
			if err := c.Delete(ctx, &u); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err = certmanager.Ensure(ctx, c, ext)
	if err != nil || res.Action != certmanager.ActionAlreadyWorking || fetched != 0 {
		t.Errorf("fixed: %+v %v", res, err)
	}
}
