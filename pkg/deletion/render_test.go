package deletion

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// renderPlanFixture is a plan with one provider deleted with its namespace and CRDs, one kept
// cluster-wide object, cert-manager going, a provider that stays and a warning.
func renderPlanFixture() *Plan {
	docker := inventory.New("docker", provider.InfrastructureProviderType, "v1.14.0", "capd-system")
	return &Plan{
		Providers: []ProviderPlan{{
			Provider: docker, Namespace: "capd-system", NamespaceDeleted: true,
			Delete: []Object{
				{Kind: "Deployment", Namespace: "capd-system", Name: "capd-controller-manager"},
				{Kind: "Service", Namespace: "capd-system", Name: "a"},
				{Kind: "Service", Namespace: "capd-system", Name: "b"},
				{Kind: "CustomResourceDefinition", Name: "dockerclusters.infrastructure.cluster.x-k8s.io"},
			},
			KeptClusterScoped: []Object{{Kind: "ClusterRole", Name: "capd-manager-role"}},
		}},
		CertManager: CertManagerPlan{Deleted: true, Delete: []Object{{Kind: "Namespace", Name: "cert-manager"}}},
		Remaining:   []inventory.Provider{inventory.New("cluster-api", provider.CoreProviderType, "v1.14.0", "capi-system")},
		Warnings:    []string{"something to know"},
	}
}

func TestRenderPlan(t *testing.T) {
	var b bytes.Buffer
	if err := RenderPlan(&b, renderPlanFixture()); err != nil {
		t.Fatal(err)
	}
	want := `PROVIDER                TYPE                     VERSION   NAMESPACE                                     OBJECTS TO DELETE                                     CRDS
infrastructure-docker   InfrastructureProvider   v1.14.0   capd-system (deleted with all its contents)   Deployment 1, Service 2, CustomResourceDefinition 1   1 deleted
cert-manager: deleted (Namespace 1)
kept ClusterRole/capd-manager-role: infrastructure-docker has several instances and the name is not prefixed with its namespace
Providers that stay installed: capi-system/cluster-api
Warning: something to know
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}

	// A provider that keeps its namespace and CRDs, and cert-manager kept with its reason.
	plan := &Plan{
		Providers:   []ProviderPlan{{Provider: inventory.New("docker", provider.InfrastructureProviderType, "v1.14.0", "capd-system"), Namespace: "capd-system", KeptCRDs: []string{"a", "b"}}},
		CertManager: CertManagerPlan{Reason: "kept (pass --include-cert-manager to delete it)"},
	}
	b.Reset()
	if err := RenderPlan(&b, plan); err != nil {
		t.Fatal(err)
	}
	want = `PROVIDER                TYPE                     VERSION   NAMESPACE            OBJECTS TO DELETE   CRDS
infrastructure-docker   InfrastructureProvider   v1.14.0   capd-system (kept)   none                2 kept
cert-manager: kept (pass --include-cert-manager to delete it)
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestReportText(t *testing.T) {
	plan := renderPlanFixture()
	rep := &Report{Plan: plan, Result: &Result{Deleted: 5, AlreadyGone: 1, InventoryRemoved: []inventory.Provider{plan.Providers[0].Provider}}}
	var b bytes.Buffer
	if err := rep.WriteText(&b, nil); err != nil {
		t.Fatal(err)
	}
	if want := "Deleted provider infrastructure-docker v1.14.0 from namespace capd-system\nDeleted cert-manager\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	// A failed run does not claim cert-manager went.
	b.Reset()
	if err := rep.WriteText(&b, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	if want := "Deleted provider infrastructure-docker v1.14.0 from namespace capd-system\n"; b.String() != want {
		t.Errorf("failed run: got %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := rep.Result.WriteCounts(&b); err != nil {
		t.Fatal(err)
	}
	if want := "5 object(s) deleted, 1 already gone\n"; b.String() != want {
		t.Errorf("counts: got %q, want %q", b.String(), want)
	}
	// No result (Apply stopped before deleting): nothing.
	b.Reset()
	var none *Result
	if err := (&Report{Plan: plan}).WriteText(&b, nil); err != nil || none.WriteCounts(&b) != nil || b.Len() != 0 {
		t.Errorf("no result printed %q", b.String())
	}
}

// TestReportJSON: the -o json document of a dry run has the plan and no result.
func TestReportJSON(t *testing.T) {
	out, err := json.Marshal(&Report{Plan: &Plan{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"plan":{"providers":null,"certManager":{"deleted":false},"listedTypes":0}}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}
