package upgrade

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// memCatalog is an in-memory catalog for the pure planning rules; the integration tests use real
// local repositories through pkg/repository.
type memCatalog struct {
	versions map[string][]string            // manifest label → versions
	series   map[string]map[string][]Series // label → version → metadata (absent: not published)
}

func (m memCatalog) Versions(_ context.Context, p inventory.Provider) ([]string, error) {
	return m.versions[p.ManifestLabel()], nil
}

func (m memCatalog) Series(_ context.Context, p inventory.Provider, v string) ([]Series, error) {
	s, ok := m.series[p.ManifestLabel()][v]
	if !ok {
		return nil, fmt.Errorf("%s %s: %w", p.ManifestLabel(), v, ErrNotPublished)
	}
	return s, nil
}

var capiSeries = []Series{{1, 14, "v1beta2"}, {1, 13, "v1beta2"}, {1, 12, "v1beta2"}, {1, 11, "v1beta2"}, {1, 10, "v1beta1"}}

func TestPlanProvidersRules(t *testing.T) {
	ctx := context.Background()
	core := inventory.New("cluster-api", provider.CoreProviderType, "v1.13.4", "capi-system")
	infra := inventory.New("docker", provider.InfrastructureProviderType, "v1.13.4", "capd-system")
	cat := memCatalog{
		versions: map[string][]string{
			// v1.15.0 is a tag without a release; v1.14.1-rc.0 a pre-release; "nightly" no version.
			"cluster-api":           {"v1.13.4", "v1.13.5", "v1.14.0", "v1.14.1-rc.0", "v1.15.0", "nightly"},
			"infrastructure-docker": {"v1.13.4", "v1.13.5", "v1.14.0"},
		},
		series: map[string]map[string][]Series{
			"cluster-api":           {"v1.13.4": capiSeries[1:], "v1.13.5": capiSeries[1:], "v1.14.0": capiSeries, "v1.14.1-rc.0": capiSeries},
			"infrastructure-docker": {"v1.13.4": capiSeries[1:], "v1.13.5": capiSeries[1:], "v1.14.0": capiSeries},
		},
	}
	plan, err := PlanProviders(ctx, cat, []inventory.Provider{core, infra})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Contracts) != 1 || plan.Contracts[0].Contract != "v1beta2" || !plan.Contracts[0].Applicable() {
		t.Fatalf("plan %+v", plan)
	}
	for _, p := range plan.Contracts[0].Providers {
		if p.NextVersion != "v1.14.0" {
			t.Errorf("%s: next %q, want v1.14.0", p.Name, p.NextVersion)
		}
	}

	// v1.14.0 of docker unpublished: docker gets the newest published, v1.13.5.
	delete(cat.series["infrastructure-docker"], "v1.14.0")
	plan, err = PlanProviders(ctx, cat, []inventory.Provider{core, infra})
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Contracts[0].Providers[1].NextVersion; got != "v1.13.5" {
		t.Errorf("docker next %q, want v1.13.5", got)
	}

	// Already at the newest: up to date.
	core.Version, infra.Version = "v1.14.0", "v1.13.5"
	plan, err = PlanProviders(ctx, cat, []inventory.Provider{core, infra})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Contracts[0].UpToDate() || plan.Contracts[0].Applicable() {
		t.Errorf("not up to date: %+v", plan.Contracts[0])
	}
}

func TestPlanProvidersContractBoundary(t *testing.T) {
	ctx := context.Background()
	old := []Series{{1, 10, "v1beta1"}, {1, 9, "v1beta1"}}
	core := inventory.New("cluster-api", provider.CoreProviderType, "v1.10.10", "capi-system")
	infra := inventory.New("foo", provider.InfrastructureProviderType, "v0.5.0", "foo-system")
	cat := memCatalog{
		// v1.14.0 is 4 minors ahead of v1.10.10: the plan stops at v1.13.0 (clusterctl's skip guard).
		versions: map[string][]string{"cluster-api": {"v1.10.10", "v1.13.0", "v1.14.0"}, "infrastructure-foo": {"v0.5.0", "v0.5.1"}},
		series: map[string]map[string][]Series{
			"cluster-api":        {"v1.10.10": old, "v1.13.0": capiSeries[1:], "v1.14.0": capiSeries},
			"infrastructure-foo": {"v0.5.0": {{0, 5, "v1beta1"}}, "v0.5.1": {{0, 5, "v1beta1"}}},
		},
	}
	plan, err := PlanProviders(ctx, cat, []inventory.Provider{core, infra})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Contracts) != 2 || plan.Contracts[0].Contract != "v1beta1" || plan.Contracts[1].Contract != "v1beta2" {
		t.Fatalf("contracts %+v", plan.Contracts)
	}
	v1 := plan.Contracts[0]
	if !v1.Current || v1.Supported || v1.Providers[0].NextVersion != "" || v1.Providers[1].NextVersion != "v0.5.1" {
		t.Errorf("v1beta1 plan %+v", v1)
	}
	// A v1beta1 provider still runs in a v1beta2 management cluster: not blocking.
	v2 := plan.Contracts[1]
	if len(v2.Blocked) != 0 || !v2.Applicable() || v2.Providers[0].NextVersion != "v1.13.0" {
		t.Errorf("v1beta2 plan %+v", v2)
	}

	// A future contract the infra provider has no release for blocks that contract's plan.
	next := append([]Series{{1, 15, "v1beta3"}}, capiSeries...)
	core.Version = "v1.14.0"
	cat.versions["cluster-api"] = append(cat.versions["cluster-api"], "v1.15.0")
	cat.series["cluster-api"]["v1.15.0"] = next
	cat.series["infrastructure-foo"]["v0.5.1"] = []Series{{0, 5, "v1beta2"}}
	infra.Version = "v0.5.1"
	plan, err = PlanProviders(ctx, cat, []inventory.Provider{core, infra})
	if err != nil {
		t.Fatal(err)
	}
	last := plan.Contracts[len(plan.Contracts)-1]
	if last.Contract != "v1beta3" || len(last.Blocked) != 1 || last.BlockedNames() != "foo-system/infrastructure-foo" || last.Applicable() {
		t.Errorf("v1beta3 plan %+v", last)
	}
}

func TestPlanProvidersErrors(t *testing.T) {
	ctx := context.Background()
	cat := memCatalog{versions: map[string][]string{"cluster-api": {"v1.13.4"}}, series: map[string]map[string][]Series{"cluster-api": {"v1.13.4": {{1, 12, "v1beta2"}}}}}
	if _, err := PlanProviders(ctx, cat, nil); err == nil || !strings.Contains(err.Error(), "capctl init") {
		t.Errorf("empty inventory: %v", err)
	}
	core := inventory.New("cluster-api", provider.CoreProviderType, "v1.13.4", "capi-system")
	if _, err := PlanProviders(ctx, cat, []inventory.Provider{core}); err == nil || !strings.Contains(err.Error(), "does not match any release series") {
		t.Errorf("bad metadata: %v", err)
	}
	twice := []inventory.Provider{core, core}
	twice[1].Namespace = "other"
	if _, err := PlanProviders(ctx, cat, twice); err == nil || !strings.Contains(err.Error(), "installed twice") {
		t.Errorf("two instances: %v", err)
	}
}
