package upgrade

import (
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/certmanager"
	capi "github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// TestRenderPlan: the provider plan says per contract what each provider gets, and what to run
// next: apply, blocked (naming the providers), or already up to date.
func TestRenderPlan(t *testing.T) {
	core := ProviderUpgrade{Name: "cluster-api", Namespace: "capi-system", Type: provider.CoreProviderType, CurrentVersion: "v1.13.4", CurrentContract: capi.Current, NextVersion: "v1.14.0", NextContract: capi.Current}
	docker := ProviderUpgrade{Name: "infrastructure-docker", Namespace: "capd-system", Type: provider.InfrastructureProviderType, CurrentVersion: "v1.14.0", CurrentContract: capi.Current}
	plan := &ProviderPlan{ManagementGroup: "capi-system/cluster-api", CertManager: &certmanager.UpgradePlan{From: "v1.20.0", To: "v1.21.1", ShouldUpgrade: true},
		Contracts: []ContractPlan{{Contract: capi.Current, Current: true, Supported: true, Providers: []ProviderUpgrade{core, docker}}}}
	var b strings.Builder
	if err := RenderPlan(&b, plan); err != nil {
		t.Fatal(err)
	}
	out := testenv.Squeeze(b.String())
	for _, want := range []string{
		`Cert-Manager will be upgraded from "v1.20.0" to "v1.21.1"`,
		"Management group: capi-system/cluster-api",
		"Latest release available for the " + capi.Current + " Cluster API contract version:",
		"cluster-api capi-system CoreProvider v1.13.4 v1.14.0 " + capi.Current,
		"infrastructure-docker capd-system InfrastructureProvider v1.14.0 Already up to date " + capi.Current,
		"You can now apply the upgrade by executing the following command:\n\n" + ApplyCommand(capi.Current),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	plan.Contracts[0].Providers = []ProviderUpgrade{docker}
	plan.CertManager = &certmanager.UpgradePlan{}
	b.Reset()
	if err := RenderPlan(&b, plan); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "Cert-Manager is already up to date") || !strings.Contains(out, "You are already up to date!") {
		t.Errorf("up to date:\n%s", out)
	}
}

// TestRenderApplyResult: a dry run says "would", counts the objects, lists what the new version
// drops, and says that nothing changed.
func TestRenderApplyResult(t *testing.T) {
	cm := &certmanager.UpgradePlan{From: "v1.20.0", To: "v1.21.1", ShouldUpgrade: true, Reason: "newer version"}
	dropped := install.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "capi-system", Name: "old"}
	res := &ApplyResult{DryRun: true, CertManager: cm, Providers: []ProviderResult{{
		Target:  Target{Provider: inventory.New("cluster-api", provider.CoreProviderType, "v1.13.4", "capi-system"), From: "v1.13.4", To: "v1.14.0"},
		Deleted: []install.ObjectRef{dropped, {Kind: "Deployment", Name: "d"}}, Dropped: []install.ObjectRef{dropped},
		Applied: []install.ObjectRef{{Kind: "Deployment", Name: "d"}}, Unchecked: []install.ObjectRef{{Kind: "Foo", Name: "f"}},
	}}}
	var b strings.Builder
	if err := RenderApplyResult(&b, res); err != nil {
		t.Fatal(err)
	}
	want := "Would upgrade cert-manager from v1.20.0 to v1.21.1 (newer version)\n" +
		"Would upgrade capi-system/cluster-api (CoreProvider) from v1.13.4 to v1.14.0: 2 objects deleted, 1 applied (1 not checkable before their CRD or namespace exists)\n" +
		"  - " + dropped.String() + " is not in v1.14.0 and would be removed\n" +
		"Dry run: nothing was changed.\n"
	if got := b.String(); got != want {
		t.Errorf("dry run\n got %q\nwant %q", got, want)
	}
	b.Reset()
	RenderWarnings(&b, &ApplyResult{Warnings: []DriftWarning{{Provider: "cluster-api", Deployment: "capi-system/capi-controller-manager", Container: "manager", What: "arg", Value: "--v=5"}}})
	RenderWarnings(&b, nil)
	if got := b.String(); got != "Warning: the upgrade drops a change made on the running controller, re-apply it afterwards: cluster-api: Deployment capi-system/capi-controller-manager container manager: arg --v=5\n" {
		t.Errorf("warnings %q", got)
	}
}
