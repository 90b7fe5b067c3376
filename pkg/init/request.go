package clusterinit

import (
	"fmt"
	"strings"

	"github.com/capctl/capctl/pkg/provider"
)

// Selection is what the user asked for, per type, as typed on the command line.
type Selection struct {
	Core             string
	Bootstrap        []string
	ControlPlane     []string
	Infrastructure   []string
	IPAM             []string
	RuntimeExtension []string
	Addon            []string
}

// Request is one provider to install.
type Request struct {
	Type provider.Type
	provider.Reference
	// Default: added by capctl on a first run, not named by the user.
	Default bool
}

func (r Request) String() string { return string(r.Type) + " " + r.Reference.String() }

// Requests are the parsed selection, plus which types the user opted out of with "-".
type Requests struct {
	Items  []Request
	OptOut map[provider.Type]bool
	// Named: the user named at least one provider (or opted out of one).
	Named bool
}

// ParseRequests checks the selection without any network or cluster access: every entry is
// name[:version] (comma lists allowed), "-" opts out of a type's first-run default (not for the
// core), and the same provider may not be named twice.
func ParseRequests(sel Selection) (*Requests, error) {
	reqs := &Requests{OptOut: map[provider.Type]bool{}}
	seen := map[string]string{}
	add := func(t provider.Type, values []string) error {
		for _, v := range values {
			for _, part := range strings.Split(v, ",") {
				part = strings.TrimSpace(part)
				if part == "" {
					continue
				}
				reqs.Named = true
				if part == "-" {
					if t == provider.CoreProviderType {
						return fmt.Errorf("the '-' value can not be used for the core provider")
					}
					reqs.OptOut[t] = true
					continue
				}
				ref, err := provider.ParseReference(part, false)
				if err != nil {
					return fmt.Errorf("%s: %w", t.Flag(), err)
				}
				if t == provider.CoreProviderType && ref.Name != provider.CoreProviderName {
					return fmt.Errorf("--core: the core provider is %q, not %q", provider.CoreProviderName, ref.Name)
				}
				key := string(t) + "/" + ref.Name
				if prev, ok := seen[key]; ok {
					return fmt.Errorf("%s %q is named twice (%s and %s); name each provider once", t, ref.Name, prev, part)
				}
				seen[key] = part
				reqs.Items = append(reqs.Items, Request{Type: t, Reference: ref})
			}
		}
		return nil
	}
	core := []string{}
	if sel.Core != "" {
		core = append(core, sel.Core)
	}
	for _, x := range []struct {
		t provider.Type
		v []string
	}{
		{provider.CoreProviderType, core},
		{provider.BootstrapProviderType, sel.Bootstrap},
		{provider.ControlPlaneProviderType, sel.ControlPlane},
		{provider.InfrastructureProviderType, sel.Infrastructure},
		{provider.IPAMProviderType, sel.IPAM},
		{provider.RuntimeExtensionProviderType, sel.RuntimeExtension},
		{provider.AddonProviderType, sel.Addon},
	} {
		if err := add(x.t, x.v); err != nil {
			return nil, err
		}
	}
	if len(core) > 1 || strings.Contains(sel.Core, ",") {
		return nil, fmt.Errorf("--core takes one provider")
	}
	return reqs, nil
}

// withDefaults adds clusterctl's first-run defaults (cluster-api, kubeadm bootstrap, kubeadm
// control plane) for the types the user neither named nor opted out of.
func (r *Requests) withDefaults() []Request {
	out := append([]Request(nil), r.Items...)
	has := map[provider.Type]bool{}
	for _, it := range r.Items {
		has[it.Type] = true
	}
	for _, d := range []Request{
		{Type: provider.CoreProviderType, Reference: provider.Reference{Name: provider.CoreProviderName}, Default: true},
		{Type: provider.BootstrapProviderType, Reference: provider.Reference{Name: "kubeadm"}, Default: true},
		{Type: provider.ControlPlaneProviderType, Reference: provider.Reference{Name: "kubeadm"}, Default: true},
	} {
		if !has[d.Type] && !r.OptOut[d.Type] {
			out = append(out, d)
		}
	}
	provider.SortByTypeThenName(out, func(q Request) provider.Type { return q.Type }, func(q Request) string { return q.Name })
	return out
}
