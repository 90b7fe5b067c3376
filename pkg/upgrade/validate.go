package upgrade

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	capi "github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/versions"
)

// Request is what `capctl upgrade apply` was asked to do: a contract, or explicit providers.
type Request struct {
	Contract  string
	Providers []Requested
}

// Requested is one `--core`, `-b`, `-c`, `-i`, `--ipam`, `--runtime-extension` or `--addon` value.
type Requested struct {
	Type provider.Type
	Ref  provider.Reference
}

func (r Requested) String() string { return r.Type.Flag() + " " + r.Ref.String() }

// Target is one provider to upgrade, validated.
type Target struct {
	Provider inventory.Provider `json:"provider"`
	// From and To are the current and the new version; FromContract/ToContract their contracts.
	From         string `json:"from"`
	To           string `json:"to"`
	FromContract string `json:"fromContract"`
	ToContract   string `json:"toContract"`
}

// maxMinorSkip is clusterctl's guard: core and kubeadm providers (from v1.10.0 on) may move at
// most 3 minors in one upgrade.
const maxMinorSkip = 3

var skipGuardSince = versions.MustParse("1.10.0")

func skipGuarded(p inventory.Provider) bool {
	switch p.Type {
	case provider.CoreProviderType:
		return true
	case provider.BootstrapProviderType, provider.ControlPlaneProviderType:
		return p.ProviderName == "kubeadm"
	}
	return false
}

// ValidateRequest turns a request into the list of upgrades, checking every input against the
// inventory and the repositories before anything is touched: the providers must be installed
// (once), versions must exist as published releases, no downgrade, no skip of more than 3 minors
// for core/kubeadm, one target contract (v1beta2) that every provider, listed or not, is compatible
// with. Providers already at the requested version are left out. The result is in upgrade order.
func ValidateRequest(ctx context.Context, cat Catalog, items []inventory.Provider, req Request) ([]Target, error) {
	if len(items) == 0 {
		return nil, ErrNoProviders
	}
	if err := checkSingleInstances(items); err != nil {
		return nil, err
	}
	if err := req.validateChoice(); err != nil {
		return nil, err
	}
	if req.Contract != "" {
		return targetsForContract(ctx, cat, items, req.Contract)
	}
	return targetsForProviders(ctx, cat, items, req.Providers)
}

func targetsForContract(ctx context.Context, cat Catalog, items []inventory.Provider, contract string) ([]Target, error) {
	plan, err := PlanProviders(ctx, cat, items)
	if err != nil {
		return nil, err
	}
	for _, cp := range plan.Contracts {
		if cp.Contract != contract {
			continue
		}
		if len(cp.Blocked) > 0 {
			return nil, fmt.Errorf("cannot upgrade to the %s contract: %s have no release for it", contract, cp.BlockedNames())
		}
		var out []Target
		for _, p := range cp.Providers {
			if p.NextVersion == "" {
				continue
			}
			inv := inventory.Find(items, p.ProviderName, p.Type)[0]
			out = append(out, Target{Provider: inv, From: p.CurrentVersion, To: p.NextVersion, FromContract: p.CurrentContract, ToContract: p.NextContract})
		}
		return out, nil
	}
	return nil, fmt.Errorf("the core provider's repository offers no release for the %s contract", contract)
}

func targetsForProviders(ctx context.Context, cat Catalog, items []inventory.Provider, reqs []Requested) ([]Target, error) {
	var problems []string
	requested := map[string]bool{}
	var targets []Target
	coreIdx, coreRequested := -1, false
	for _, r := range reqs {
		if r.Ref.Version == "" || r.Ref.Version == "latest" {
			problems = append(problems, fmt.Sprintf("%s: give the version to upgrade to, as [namespace/]name:version (e.g. %s:v1.14.0)", r, r.Ref.Name))
			continue
		}
		found := inventory.Find(items, r.Ref.Name, r.Type)
		if len(found) == 0 {
			problems = append(problems, fmt.Sprintf("%s: no %s %q is installed (installed: %s)", r, r.Type, r.Ref.Name, installedNames(items, r.Type)))
			continue
		}
		inv := found[0]
		if r.Ref.Namespace != "" && r.Ref.Namespace != inv.Namespace {
			problems = append(problems, fmt.Sprintf("%s: %s is installed in namespace %s, not %s", r, r.Ref.Name, inv.Namespace, r.Ref.Namespace))
			continue
		}
		key := string(r.Type) + "/" + r.Ref.Name
		if requested[key] {
			problems = append(problems, fmt.Sprintf("%s: named twice", r))
			continue
		}
		requested[key] = true
		if inv.Type == provider.CoreProviderType {
			coreRequested = true
		}
		t, errs, err := validateOne(ctx, cat, inv, r.Ref.Version)
		if err != nil {
			return nil, err
		}
		if len(errs) > 0 {
			for _, e := range errs {
				problems = append(problems, fmt.Sprintf("%s: %s", r, e))
			}
			continue
		}
		targets = append(targets, t)
		if inv.Type == provider.CoreProviderType {
			coreIdx = len(targets) - 1
		}
	}

	// The target contract: the core's new (or current) version's. When the core's own request is
	// refused the contract is unknown, and the contract checks wait for a valid request.
	var contract string
	switch {
	case coreIdx >= 0:
		contract = targets[coreIdx].ToContract
	case !coreRequested:
		core, ok := inventory.Core(items)
		if !ok {
			return nil, fmt.Errorf("the inventory has no core provider (cluster-api): install it with `capctl init`")
		}
		info, err := readProviderInfo(ctx, cat, core)
		if err != nil {
			return nil, err
		}
		contract = info.currentContract
	}
	if contract != "" && contract != capi.Current {
		problems = append(problems, fmt.Sprintf("the core provider would implement the %s contract, but capctl can only upgrade management clusters to %s", contract, capi.Current))
		contract = ""
	}
	if contract != "" {
		for _, t := range targets {
			if !capi.IsCompatible(contract, t.ToContract) {
				problems = append(problems, fmt.Sprintf("%s %s implements the %s contract, which does not work with a %s core provider (mixed contracts)", t.Provider.ManifestLabel(), t.To, t.ToContract, contract))
			}
		}
		for _, p := range items {
			if requested[string(p.Type)+"/"+p.ProviderName] {
				continue
			}
			info, err := readProviderInfo(ctx, cat, p)
			if err != nil {
				return nil, err
			}
			if !capi.IsCompatible(contract, info.currentContract) {
				problems = append(problems, fmt.Sprintf("%s %s implements the %s contract, which does not work with a %s core provider: include it in the upgrade (%s %s:VERSION)", p.ManifestLabel(), p.Version, info.currentContract, contract, p.Type.Flag(), p.ProviderName))
			}
		}
	}
	if len(problems) > 0 {
		return nil, &InvalidRequestError{Problems: problems}
	}
	out := targets[:0]
	for _, t := range targets {
		if t.From != t.To {
			out = append(out, t)
		}
	}
	provider.SortByTypeThenName(out, func(t Target) provider.Type { return t.Provider.Type }, func(t Target) string { return t.Provider.ProviderName })
	return out, nil
}

// validateOne checks one provider's target version. problems are what is wrong with the request;
// err is a failure to check (the repository cannot be read). Existence is checked and reported
// first, then every other problem of the request (downgrade, minors skipped, metadata).
func validateOne(ctx context.Context, cat Catalog, inv inventory.Provider, version string) (t Target, problems []string, err error) {
	if !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	to, err := versions.Parse(version)
	if err != nil {
		return Target{}, []string{fmt.Sprintf("%q is not a semantic version", version)}, nil
	}
	from, err := versions.Parse(inv.Version)
	if err != nil {
		return Target{}, []string{fmt.Sprintf("the inventory records version %q, which is not a semantic version", inv.Version)}, nil
	}
	all, err := cat.Versions(ctx, inv)
	if err != nil {
		return Target{}, nil, fmt.Errorf("listing the versions of %s: %w", inv.ManifestLabel(), err)
	}
	listed := false
	for _, v := range all {
		if pv, err := versions.Parse(v); err == nil && pv.Equal(to) {
			listed, version = true, v
			break
		}
	}
	if !listed {
		problems = append(problems, fmt.Sprintf("version %s is not in the repository of %s (available: %s)", version, inv.ManifestLabel(), newestVersions(all, 5)))
	}
	if to.LessThan(from) {
		problems = append(problems, fmt.Sprintf("%s is older than the installed %s: downgrades are not supported", version, inv.Version))
	}
	if skipsTooFar(inv, from, to) {
		problems = append(problems, fmt.Sprintf("upgrading %s from %s to %s skips more than %d minors: upgrade in steps (e.g. to v%d.%d first)", inv.ManifestLabel(), inv.Version, version, maxMinorSkip, from.Major(), from.Minor()+maxMinorSkip))
	}
	if !listed {
		return Target{}, problems, nil
	}
	series, err := cat.Series(ctx, inv, version)
	if errors.Is(err, ErrNotPublished) {
		return Target{}, append(problems, fmt.Sprintf("%s is tagged but has no published release", version)), nil
	}
	if err != nil {
		return Target{}, nil, err
	}
	ts, ok := seriesOf(series, to)
	if !ok {
		problems = append(problems, fmt.Sprintf("invalid provider metadata: %s does not match any release series of its metadata.yaml", version))
	}
	if len(problems) > 0 {
		return Target{}, problems, nil
	}
	t = Target{Provider: inv, From: inv.Version, To: version, ToContract: ts.Contract}
	if fs, ok := seriesOf(series, from); ok {
		t.FromContract = fs.Contract
	} else if info, err := readProviderInfo(ctx, cat, inv); err == nil {
		t.FromContract = info.currentContract
	}
	return t, nil, nil
}

func newestVersions(all []string, n int) string {
	var vs []*semver.Version
	for _, s := range all {
		if v, err := versions.Parse(s); err == nil {
			vs = append(vs, v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].GreaterThan(vs[j]) })
	if len(vs) == 0 {
		return "none"
	}
	var out []string
	for i := 0; i < len(vs) && i < n; i++ {
		out = append(out, "v"+vs[i].String())
	}
	return strings.Join(out, ", ")
}

func installedNames(items []inventory.Provider, t provider.Type) string {
	var names []string
	for _, p := range items {
		if p.Type == t {
			names = append(names, p.String())
		}
	}
	if len(names) == 0 {
		return "none of this type"
	}
	return strings.Join(names, ", ")
}

// InvalidRequestError lists every problem of an upgrade request at once.
type InvalidRequestError struct{ Problems []string }

func (e *InvalidRequestError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid upgrade: " + e.Problems[0]
	}
	return "invalid upgrade:\n  - " + strings.Join(e.Problems, "\n  - ")
}
