package upgrade

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
	capi "github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/versions"
)

// Series is one release series of a provider's metadata.yaml.
type Series struct {
	Major, Minor uint64
	Contract     string
}

// ErrNotPublished marks a version that is tagged but has no published release (its metadata.yaml
// cannot be fetched). Catalogs wrap it; the plan skips such versions instead of failing.
var ErrNotPublished = errors.New("no published release")

// Catalog is what planning needs from provider repositories.
type Catalog interface {
	// Versions lists the versions of the installed provider's repository (any order; entries that
	// are not semantic versions are ignored).
	Versions(ctx context.Context, p inventory.Provider) ([]string, error)
	// Series returns the release series of version's metadata.yaml, or an error wrapping
	// ErrNotPublished when the version has no published release.
	Series(ctx context.Context, p inventory.Provider, version string) ([]Series, error)
}

// ProviderPlan is the provider upgrade plan of a management cluster.
type ProviderPlan struct {
	// ManagementGroup is the core provider, `namespace/cluster-api`.
	ManagementGroup string `json:"managementGroup"`
	// Contracts are the plans per Cluster API contract, oldest first (string order, as clusterctl).
	Contracts []ContractPlan `json:"contracts"`
	// CertManager is cert-manager's upgrade; nil when the cluster's cert-manager is not managed
	// by capctl/clusterctl (then it is left alone).
	CertManager *CertManagerPlan `json:"certManager,omitempty"`
}

// ContractPlan is the upgrade of every provider to the latest release of one contract.
type ContractPlan struct {
	Contract string `json:"contract"`
	// Current is true for the contract the core provider implements now.
	Current   bool              `json:"current"`
	Providers []ProviderUpgrade `json:"providers"`
	// Blocked lists providers that have no release for this contract and whose current version
	// does not implement it either: the contract cannot be reached until they publish one.
	Blocked []ProviderUpgrade `json:"blocked,omitempty"`
	// Supported is false for contracts capctl cannot upgrade to (only contract.Current).
	Supported bool `json:"supported"`
}

// UpToDate reports that no provider has a newer version in this plan.
func (p ContractPlan) UpToDate() bool {
	for _, u := range p.Providers {
		if u.NextVersion != "" {
			return false
		}
	}
	return true
}

// Applicable reports whether `capctl upgrade apply --contract` can run this plan.
func (p ContractPlan) Applicable() bool {
	return p.Supported && len(p.Blocked) == 0 && !p.UpToDate()
}

// ProviderUpgrade is one provider's row of a plan.
type ProviderUpgrade struct {
	Name            string        `json:"name"` // manifest label, e.g. infrastructure-docker
	Namespace       string        `json:"namespace"`
	ProviderName    string        `json:"providerName"`
	Type            provider.Type `json:"type"`
	CurrentVersion  string        `json:"currentVersion"`
	CurrentContract string        `json:"currentContract"`
	// NextVersion is empty when the provider is already up to date for this contract.
	NextVersion  string `json:"nextVersion,omitempty"`
	NextContract string `json:"nextContract,omitempty"`
}

// providerInfo is what the catalog says about one installed provider.
type providerInfo struct {
	p               inventory.Provider
	current         *semver.Version
	currentContract string
	series          []Series
	// candidates: final (non-pre-release) versions newer than current whose series is known,
	// newest first.
	candidates []candidate
}

type candidate struct {
	version  string
	v        *semver.Version
	contract string
	// published is known true for the version whose metadata was read.
	published bool
}

func seriesOf(series []Series, v *semver.Version) (Series, bool) {
	for _, s := range series {
		if s.Major == v.Major() && s.Minor == v.Minor() {
			return s, true
		}
	}
	return Series{}, false
}

// readProviderInfo lists the provider's versions and reads the metadata of its newest published
// final release. Tags without a release and pre-releases are skipped, never fatal.
func readProviderInfo(ctx context.Context, cat Catalog, p inventory.Provider) (*providerInfo, error) {
	cur, err := versions.Parse(p.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: the inventory records version %q, which is not a semantic version", p.String(), p.Version)
	}
	all, err := cat.Versions(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("listing the versions of %s: %w", p.ManifestLabel(), err)
	}
	type pv struct {
		s string
		v *semver.Version
	}
	var newer []pv
	seen := map[string]bool{}
	for _, s := range all {
		v, err := versions.Parse(s)
		if err != nil || v.Prerelease() != "" || !v.GreaterThan(cur) || seen[v.String()] {
			continue
		}
		seen[v.String()] = true
		newer = append(newer, pv{s, v})
	}
	sort.Slice(newer, func(i, j int) bool { return newer[i].v.GreaterThan(newer[j].v) })

	info := &providerInfo{p: p, current: cur}
	var source string
	for _, c := range append(newer, pv{p.Version, cur}) {
		s, err := cat.Series(ctx, p, c.s)
		if errors.Is(err, ErrNotPublished) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the metadata of %s %s: %w", p.ManifestLabel(), c.s, err)
		}
		info.series, source = s, c.s
		break
	}
	if info.series == nil {
		return nil, fmt.Errorf("%s: no metadata.yaml found for %s or any newer release in its repository", p.ManifestLabel(), p.Version)
	}
	cs, ok := seriesOf(info.series, cur)
	if !ok {
		return nil, fmt.Errorf("invalid provider metadata: version %s of %s does not match any release series of the metadata.yaml of %s", p.Version, p.ManifestLabel(), source)
	}
	info.currentContract = cs.Contract
	for _, c := range newer {
		s, ok := seriesOf(info.series, c.v)
		if !ok {
			// Newer than the newest published metadata: a tag without a release.
			continue
		}
		info.candidates = append(info.candidates, candidate{version: c.s, v: c.v, contract: s.Contract, published: c.s == source})
	}
	return info, nil
}

// skipsTooFar is clusterctl's guard: core and kubeadm providers (from v1.10.0 on) may move at most
// 3 minors in one upgrade.
func skipsTooFar(p inventory.Provider, from, to *semver.Version) bool {
	return skipGuarded(p) && !from.LessThan(skipGuardSince) && to.Major() == from.Major() && to.Minor() > from.Minor()+maxMinorSkip
}

// next returns the newest published candidate compatible with contract (and, for core and
// kubeadm providers, at most 3 minors ahead, so that the plan is one apply can run).
func (info *providerInfo) next(ctx context.Context, cat Catalog, contract string) (*candidate, error) {
	for i := range info.candidates {
		c := &info.candidates[i]
		if !capi.IsCompatible(contract, c.contract) || skipsTooFar(info.p, info.current, c.v) {
			continue
		}
		if !c.published {
			if _, err := cat.Series(ctx, info.p, c.version); err != nil {
				if errors.Is(err, ErrNotPublished) {
					continue
				}
				return nil, fmt.Errorf("reading the metadata of %s %s: %w", info.p.ManifestLabel(), c.version, err)
			}
			c.published = true
		}
		return c, nil
	}
	return nil, nil
}

// ErrNoProviders means the inventory is empty.
var ErrNoProviders = errors.New("there are no providers in the management cluster: run `capctl init` to initialise it")

// PlanProviders computes the provider upgrade plan (clusterctl's rules, spec §13.1, with these
// differences: tags without a published release and pre-releases never break the plan, and a
// contract a provider cannot reach is reported with the providers that block it instead of being
// silently dropped).
func PlanProviders(ctx context.Context, cat Catalog, items []inventory.Provider) (*ProviderPlan, error) {
	if len(items) == 0 {
		return nil, ErrNoProviders
	}
	if err := checkSingleInstances(items); err != nil {
		return nil, err
	}
	core, ok := inventory.Core(items)
	if !ok {
		return nil, fmt.Errorf("the inventory has no core provider (cluster-api): install it with `capctl init`")
	}
	infos := make([]*providerInfo, 0, len(items))
	var coreInfo *providerInfo
	for _, p := range items {
		info, err := readProviderInfo(ctx, cat, p)
		if err != nil {
			return nil, err
		}
		infos = append(infos, info)
		if p.Type == provider.CoreProviderType {
			coreInfo = info
		}
	}
	// Contracts offered: those of the core's series at or after its current minor.
	set := map[string]bool{}
	for _, s := range coreInfo.series {
		if s.Major > coreInfo.current.Major() || (s.Major == coreInfo.current.Major() && s.Minor >= coreInfo.current.Minor()) {
			set[s.Contract] = true
		}
	}
	contracts := make([]string, 0, len(set))
	for c := range set {
		contracts = append(contracts, c)
	}
	sort.Strings(contracts)

	plan := &ProviderPlan{ManagementGroup: core.Namespace + "/" + provider.CoreProviderName}
	for _, contract := range contracts {
		cp := ContractPlan{Contract: contract, Current: contract == coreInfo.currentContract, Supported: contract == capi.Current}
		for _, info := range infos {
			row := ProviderUpgrade{
				Name: info.p.ManifestLabel(), Namespace: info.p.Namespace, ProviderName: info.p.ProviderName, Type: info.p.Type,
				CurrentVersion: info.p.Version, CurrentContract: info.currentContract,
			}
			n, err := info.next(ctx, cat, contract)
			if err != nil {
				return nil, err
			}
			if n != nil {
				row.NextVersion, row.NextContract = n.version, n.contract
			} else if !cp.Current && !capi.IsCompatible(contract, info.currentContract) {
				cp.Blocked = append(cp.Blocked, row)
			}
			cp.Providers = append(cp.Providers, row)
		}
		plan.Contracts = append(plan.Contracts, cp)
	}
	return plan, nil
}

func checkSingleInstances(items []inventory.Provider) error {
	seen := map[string]string{}
	for _, p := range items {
		key := string(p.Type) + "/" + p.ProviderName
		if ns, ok := seen[key]; ok {
			return fmt.Errorf("the %s provider %q is installed twice (namespaces %s and %s): capctl, like clusterctl, upgrades only management clusters with one instance of each provider", p.Type, p.ProviderName, ns, p.Namespace)
		}
		seen[key] = p.Namespace
	}
	return nil
}

// ApplyCommand is the command that applies a contract plan.
func ApplyCommand(contract string) string {
	return "capctl upgrade apply --contract " + contract
}

// BlockedNames lists blocked providers as `namespace/name`.
func (p ContractPlan) BlockedNames() string {
	names := make([]string, 0, len(p.Blocked))
	for _, b := range p.Blocked {
		names = append(names, b.Namespace+"/"+b.Name)
	}
	return strings.Join(names, ", ")
}

// ReadInventory reads the inventory of the management cluster; no inventory (or an empty one) is
// an error that says to run `capctl init`.
func ReadInventory(ctx context.Context, c client.Reader) ([]inventory.Provider, error) {
	if err := capi.CheckManagementCluster(ctx, c, capi.AllowContract("v1beta1")); err != nil {
		return nil, err
	}
	items, err := inventory.List(ctx, c)
	if errors.Is(err, inventory.ErrNoInventory) {
		return nil, fmt.Errorf("the management cluster has no provider inventory (%s): it is not a Cluster API management cluster yet; run `capctl init`, or check --kubeconfig/--kubeconfig-context", inventory.CRDName)
	}
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, ErrNoProviders
	}
	return items, nil
}

// Plan reads the inventory and plans the provider upgrades; when cat is also a CertManagerSource,
// cert-manager's upgrade is planned too.
func Plan(ctx context.Context, c *cluster.Client, cat Catalog) (*ProviderPlan, error) {
	items, err := ReadInventory(ctx, c)
	if err != nil {
		return nil, err
	}
	plan, err := PlanProviders(ctx, cat, items)
	if err != nil {
		return nil, err
	}
	if cs, ok := cat.(CertManagerSource); ok {
		if plan.CertManager, _, err = planCertManager(ctx, c, cs); err != nil {
			return nil, err
		}
	}
	return plan, nil
}
