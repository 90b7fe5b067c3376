package clusterinit_test

import (
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/certmanager"
	clusterinit "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/inventory"
)

// TestInitAfterCertManagerCRDsPartlyApplied sets up, deterministically, the state an init cut
// inside cert-manager's CRD level leaves behind: capctl's labelled Certificates CRD is there (so
// cert-manager counts as installed by capctl) and its Issuers CRD is not. A re-run must not refuse
// the providers' Issuers as an unknown kind: it installs cert-manager again and then the providers.
func TestInitAfterCertManagerCRDsPartlyApplied(t *testing.T) {
	testenv.Integration(t)
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	ctl := installtest.Start(ctx, env.Client, installtest.Options{Interval: 250 * time.Millisecond, OnError: func(err error) { t.Logf("stand-in controllers: %v", err) }})
	defer ctl.Stop()

	cl := clients(t, cfgPath, env.Config)
	comps, err := certmanager.Fetch(ctx, cl.Repo, "")
	if err != nil {
		t.Fatal(err)
	}
	certmanager.Prepare(comps.Objects, comps.Version)
	var certificates *unstructured.Unstructured
	for i := range comps.Objects {
		if comps.Objects[i].GetKind() == "CustomResourceDefinition" && comps.Objects[i].GetName() == certmanager.CertificatesCRD {
			certificates = comps.Objects[i].DeepCopy()
		}
	}
	if certificates == nil {
		t.Fatalf("cert-manager %s (%s) has no CRD %s", comps.Version, comps.URL, certmanager.CertificatesCRD)
	}
	if err := env.Client.Create(ctx, certificates); err != nil {
		t.Fatal(err)
	}
	own, err := certmanager.Owner(ctx, env.Client)
	if err != nil || !own.Managed {
		t.Fatalf("the labelled Certificates CRD alone should count as capctl's cert-manager: %+v %v", own, err)
	}
	issuers := "issuers.cert-manager.io"
	if err := env.Client.Get(ctx, client.ObjectKey{Name: issuers}, &apiextensionsv1.CustomResourceDefinition{}); err == nil {
		t.Fatalf("CRD %s exists before the re-run; the partial state was not set up", issuers)
	}

	o := clusterinit.InitRequest{StrictChecks: true, WaitProviders: true, WaitProviderTimeout: time.Minute, WaitInterval: 100 * time.Millisecond,
		Selection: clusterinit.Selection{Core: "cluster-api:v1.13.5", Bootstrap: []string{"kubeadm:v1.13.5"}, ControlPlane: []string{"kubeadm:v1.13.5"}, Infrastructure: []string{"docker:v1.13.5"}}}
	res, err := clusterinit.InitWith(ctx, clients(t, cfgPath, env.Config), o)
	if err != nil {
		if strings.Contains(err.Error(), "Issuer") {
			t.Fatalf("the re-run refused the providers' Issuers although cert-manager's own CRDs define them: %v", err)
		}
		t.Fatal(err)
	}
	if len(res.Providers) != 4 {
		t.Errorf("%d providers installed, want 4: %+v", len(res.Providers), res)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: issuers}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Errorf("cert-manager was not completed: CRD %s: %v", issuers, err)
	}
	assertInstalled(t, env.Client, "v1.13.5")
	items, err := inventory.List(ctx, env.Client)
	if err != nil || len(items) != 4 {
		t.Fatalf("inventory: %v %v", items, err)
	}
}
