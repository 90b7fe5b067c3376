package multicluster

import (
	"fmt"
	"sort"
	"strings"
)

// Drift is one provider whose version or contract is not the same on every management cluster
// that was read.
type Drift struct {
	Provider string `json:"provider"`
	// Variants are the versions (with contract) found, each with the management clusters running
	// it, most common first; "not installed" when some management clusters lack the provider.
	Variants []Variant `json:"variants"`
	// Summary says it in one line: "cluster-api v1.13.5 on eu-2, v1.14.2 elsewhere".
	Summary string `json:"summary"`
}

// Variant is one version and contract of a provider and where it runs.
type Variant struct {
	Version            string   `json:"version"`
	Contract           string   `json:"contract,omitempty"`
	ManagementClusters []string `json:"managementClusters"`
}

// NotInstalled is the Variant version of management clusters without the provider.
const NotInstalled = "not installed"

func (v Variant) label() string {
	if v.Contract == "" || v.Version == NotInstalled {
		return v.Version
	}
	return v.Version + " (" + v.Contract + ")"
}

// FindDrift compares the providers of the management clusters that were read (pure). Providers
// are matched by manifest label; a management cluster that was not read is left out.
func FindDrift(ms []ManagementCluster) []Drift {
	type key struct{ version, contract string }
	where := map[string]map[key][]string{}
	var read []string
	for _, m := range ms {
		if !m.Reachable || m.Error != "" {
			continue
		}
		read = append(read, m.Name)
		for _, p := range m.Providers {
			if where[p.Name] == nil {
				where[p.Name] = map[key][]string{}
			}
			k := key{p.Version, p.Contract}
			where[p.Name][k] = append(where[p.Name][k], m.Name)
		}
	}
	var out []Drift
	for name, byKey := range where {
		seen := map[string]bool{}
		var variants []Variant
		for k, ctxs := range byKey {
			for _, c := range ctxs {
				seen[c] = true
			}
			variants = append(variants, Variant{Version: k.version, Contract: k.contract, ManagementClusters: ctxs})
		}
		var missing []string
		for _, c := range read {
			if !seen[c] {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			variants = append(variants, Variant{Version: NotInstalled, ManagementClusters: missing})
		}
		if len(variants) < 2 {
			continue
		}
		sort.Slice(variants, func(i, j int) bool {
			a, b := variants[i], variants[j]
			if len(a.ManagementClusters) != len(b.ManagementClusters) {
				return len(a.ManagementClusters) > len(b.ManagementClusters)
			}
			return a.label() < b.label()
		})
		for i := range variants {
			sort.Strings(variants[i].ManagementClusters)
		}
		out = append(out, Drift{Provider: name, Variants: variants, Summary: driftLine(name, variants)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	return out
}

// driftLine names the less common variants with their management clusters and the most common
// one as "elsewhere" when it alone is the most common.
func driftLine(name string, variants []Variant) string {
	common := -1
	if len(variants[0].ManagementClusters) > len(variants[1].ManagementClusters) {
		common = 0
	}
	var parts []string
	for i, v := range variants {
		if i == common {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s on %s", v.label(), joinNames(v.ManagementClusters)))
	}
	if common == 0 {
		parts = append(parts, variants[0].label()+" elsewhere")
	}
	return name + " " + strings.Join(parts, ", ")
}

// joinNames is "a", "a and b", "a, b and c".
func joinNames(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
