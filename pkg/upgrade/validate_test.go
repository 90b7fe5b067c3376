package upgrade

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

func req(t provider.Type, ref string) Requested {
	r, err := provider.ParseReference(ref, true)
	if err != nil {
		panic(err)
	}
	return Requested{Type: t, Ref: r}
}

func TestValidateRequest(t *testing.T) {
	ctx := context.Background()
	root, _ := filepath.Abs("testdata/repository")
	cat := repoCatalog(t, root, "cluster-api", "infrastructure-foo", "infrastructure-bar")
	items := []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, "v1.14.0", "capi-system"),
		inventory.New("foo", provider.InfrastructureProviderType, "v0.1.0", "foo-system"),
		inventory.New("bar", provider.InfrastructureProviderType, "v1.0.0", "bar-system"),
	}
	ok := func(r Request) []Target {
		t.Helper()
		ts, err := ValidateRequest(ctx, cat, items, r)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		return ts
	}
	ts := ok(Request{Providers: []Requested{req(provider.InfrastructureProviderType, "foo-system/foo:v0.2.0")}})
	if len(ts) != 1 || ts[0].To != "v0.2.0" || ts[0].ToContract != "v1beta2" || ts[0].FromContract != "v1beta2" {
		t.Errorf("targets %+v", ts)
	}
	ts = ok(Request{Contract: "v1beta2"})
	// bar's next release (v2.0.0) is for v1beta3: it stays; foo gets its newest v1beta2 release.
	if len(ts) != 1 || ts[0].Provider.ProviderName != "foo" || ts[0].To != "v0.2.0" {
		t.Errorf("contract targets %+v", ts)
	}
	for _, tc := range []struct {
		name string
		r    Request
		want string
	}{
		{"downgrade", Request{Providers: []Requested{req(provider.InfrastructureProviderType, "foo:v0.0.9")}}, "downgrades are not supported"},
		{"not in repository", Request{Providers: []Requested{req(provider.InfrastructureProviderType, "foo:v0.9.0")}}, "is not in the repository of infrastructure-foo (available: v0.3.0, v0.2.1-rc.0, v0.2.0, v0.1.0)"},
		{"tag without release", Request{Providers: []Requested{req(provider.InfrastructureProviderType, "foo:v0.3.0")}}, "no published release"},
		{"not installed", Request{Providers: []Requested{req(provider.InfrastructureProviderType, "aws:v2.0.0")}}, `no InfrastructureProvider "aws" is installed`},
		{"wrong namespace", Request{Providers: []Requested{req(provider.InfrastructureProviderType, "other/foo:v0.2.0")}}, "is installed in namespace foo-system"},
		{"mixed contracts", Request{Providers: []Requested{req(provider.InfrastructureProviderType, "bar:v2.0.0")}}, "mixed contracts"},
		{"core to another contract", Request{Providers: []Requested{req(provider.CoreProviderType, "cluster-api:v1.15.0")}}, "can only upgrade management clusters to v1beta2"},
		{"contract other than v1beta2", Request{Contract: "v1beta3"}, "can only upgrade to the v1beta2 contract"},
		{"both", Request{Contract: "v1beta2", Providers: []Requested{req(provider.InfrastructureProviderType, "foo:v0.2.0")}}, "cannot be combined"},
		{"several problems at once", Request{Providers: []Requested{req(provider.InfrastructureProviderType, "foo:v0.0.9"), req(provider.InfrastructureProviderType, "bar:v9.0.0")}}, "downgrades are not supported\n  - "},
	} {
		_, err := ValidateRequest(ctx, cat, items, tc.r)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	// Already there: nothing to do.
	if ts := ok(Request{Providers: []Requested{req(provider.CoreProviderType, "cluster-api:v1.14.0")}}); len(ts) != 0 {
		t.Errorf("same version: %+v", ts)
	}
}

// guardCatalog is a v1beta1 management cluster (cluster-api v1.10.10, foo v0.1.0) with newer
// releases to upgrade to.
func guardCatalog() (memCatalog, []inventory.Provider) {
	old := []Series{{1, 10, "v1beta1"}}
	cat := memCatalog{
		versions: map[string][]string{"cluster-api": {"v1.10.10", "v1.13.5", "v1.14.0"}, "infrastructure-foo": {"v0.1.0", "v0.2.0"}},
		series: map[string]map[string][]Series{
			"cluster-api":        {"v1.10.10": old, "v1.13.5": capiSeries[1:], "v1.14.0": capiSeries},
			"infrastructure-foo": {"v0.1.0": {{0, 1, "v1alpha4"}}, "v0.2.0": {{0, 2, "v1beta2"}, {0, 1, "v1alpha4"}}},
		},
	}
	items := []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, "v1.10.10", "capi-system"),
		inventory.New("foo", provider.InfrastructureProviderType, "v0.1.0", "foo-system"),
	}
	return cat, items
}

// TestValidateRequestMissingVersionFirstEveryProblemAtOnce: `--core cluster-api:v1.99.0` says the
// version does not exist (before the minor-skip guard), and every problem of a request comes in
// one error, with the contract checks of the valid requests and the other providers.
func TestValidateRequestMissingVersionFirstEveryProblemAtOnce(t *testing.T) {
	ctx := context.Background()
	cat, items := guardCatalog()
	var err error
	_, err = ValidateRequest(ctx, cat, items, Request{Providers: []Requested{req(provider.CoreProviderType, "cluster-api:v1.99.0")}})
	if err == nil || !strings.Contains(err.Error(), "version v1.99.0 is not in the repository of cluster-api (available: v1.14.0, v1.13.5, v1.10.10)") ||
		strings.Index(err.Error(), "not in the repository") > strings.Index(err.Error(), "skips more than") {
		t.Errorf("missing version, then the skip: %v", err)
	}
	_, err = ValidateRequest(ctx, cat, items, Request{Providers: []Requested{req(provider.CoreProviderType, "cluster-api:v1.99.0"), req(provider.InfrastructureProviderType, "foo:v0.0.1")}})
	for _, want := range []string{"v1.99.0 is not in the repository", "foo:v0.0.1", "downgrades are not supported"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("all problems at once: %v lacks %q", err, want)
		}
	}
	_, err = ValidateRequest(ctx, cat, items, Request{Providers: []Requested{req(provider.InfrastructureProviderType, "aws:v0.0.1"), req(provider.CoreProviderType, "cluster-api:v1.13.5")}})
	for _, want := range []string{`no InfrastructureProvider "aws" is installed`, "include it in the upgrade"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("request and contract problems at once: %v lacks %q", err, want)
		}
	}
}

func TestValidateRequestGuards(t *testing.T) {
	ctx := context.Background()
	cat, items := guardCatalog()
	_, err := ValidateRequest(ctx, cat, items, Request{Providers: []Requested{req(provider.CoreProviderType, "cluster-api:v1.14.0")}})
	if err == nil || !strings.Contains(err.Error(), "skips more than 3 minors") {
		t.Errorf("skip guard: %v", err)
	}
	// An unlisted provider whose contract does not fit must be included.
	_, err = ValidateRequest(ctx, cat, items, Request{Providers: []Requested{req(provider.CoreProviderType, "cluster-api:v1.13.5")}})
	if err == nil || !strings.Contains(err.Error(), "include it in the upgrade (--infrastructure foo:VERSION)") {
		t.Errorf("unlisted provider: %v", err)
	}
	ts, err := ValidateRequest(ctx, cat, items, Request{Providers: []Requested{req(provider.CoreProviderType, "cluster-api:v1.13.5"), req(provider.InfrastructureProviderType, "foo:v0.2.0")}})
	if err != nil || len(ts) != 2 || ts[0].Provider.Type != provider.CoreProviderType {
		t.Errorf("both: %+v %v", ts, err)
	}
}
