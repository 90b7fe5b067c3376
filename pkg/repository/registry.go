package repository

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/provider"
)

// Provider is one entry of the provider registry: a name, a type and the URL of its components
// file. The URL's folder is the repository, the URL's last element the components file name.
type Provider struct {
	Name string        `json:"name"`
	Type provider.Type `json:"type"`
	URL  string        `json:"url"`
}

// ManifestLabel is the `cluster.x-k8s.io/provider` value (`infrastructure-docker`).
func (p Provider) ManifestLabel() string { return provider.ManifestLabel(p.Name, p.Type) }

// ComponentsFile is the components file name: the last element of the URL.
// An OCI repository's components file is named by the provider's type (ociComponentsFile).
func (p Provider) ComponentsFile() string {
	if IsOCI(p.URL) {
		return ociComponentsFile(p)
	}
	return path.Base(strings.TrimRight(p.URL, "/"))
}

// RepositoryURL is the URL without the components file name, with a trailing slash, as
// `clusterctl config repositories` shows it.
func (p Provider) RepositoryURL() string {
	if IsOCI(p.URL) {
		return p.URL // the reference names the repository; there is no file in it
	}
	u := strings.TrimRight(p.URL, "/")
	if i := strings.LastIndex(u, "/"); i >= 0 {
		return u[:i+1]
	}
	return u
}

func (p Provider) String() string {
	if p.Type == "" {
		return p.Name
	}
	return fmt.Sprintf("%s %q", p.Type, p.Name)
}

type builtin struct {
	t    provider.Type
	name string
	repo string
	file string
}

const ghReleases = "https://github.com/%s/releases/latest/%s"

// builtins is clusterctl v1.14's provider list (66 entries), see clusterctl-spec.md §3.2.
var builtins = []builtin{
	{provider.CoreProviderType, "cluster-api", "kubernetes-sigs/cluster-api", "core-components.yaml"},

	{provider.BootstrapProviderType, "canonical-kubernetes", "canonical/cluster-api-k8s", ""},
	{provider.BootstrapProviderType, "k0sproject-k0smotron", "k0sproject/k0smotron", ""},
	{provider.BootstrapProviderType, "kairos-io", "kairos-io/cluster-api-provider-kairos", ""},
	{provider.BootstrapProviderType, "kubeadm", "kubernetes-sigs/cluster-api", ""},
	{provider.BootstrapProviderType, "kubekey-k3s", "kubesphere/kubekey", ""},
	{provider.BootstrapProviderType, "microk8s", "canonical/cluster-api-bootstrap-provider-microk8s", ""},
	{provider.BootstrapProviderType, "rke2", "rancher/cluster-api-provider-rke2", ""},
	{provider.BootstrapProviderType, "talos", "siderolabs/cluster-api-bootstrap-provider-talos", ""},

	{provider.ControlPlaneProviderType, "canonical-kubernetes", "canonical/cluster-api-k8s", ""},
	{provider.ControlPlaneProviderType, "hosted-control-plane", "teutonet/cluster-api-provider-hosted-control-plane", ""},
	{provider.ControlPlaneProviderType, "k0sproject-k0smotron", "k0sproject/k0smotron", ""},
	{provider.ControlPlaneProviderType, "kairos-io", "kairos-io/cluster-api-provider-kairos", ""},
	{provider.ControlPlaneProviderType, "kamaji", "clastix/cluster-api-control-plane-provider-kamaji", ""},
	{provider.ControlPlaneProviderType, "kubeadm", "kubernetes-sigs/cluster-api", ""},
	{provider.ControlPlaneProviderType, "kubekey-k3s", "kubesphere/kubekey", ""},
	{provider.ControlPlaneProviderType, "microk8s", "canonical/cluster-api-control-plane-provider-microk8s", ""},
	{provider.ControlPlaneProviderType, "nested", "kubernetes-sigs/cluster-api-provider-nested", ""},
	{provider.ControlPlaneProviderType, "rke2", "rancher/cluster-api-provider-rke2", ""},
	{provider.ControlPlaneProviderType, "talos", "siderolabs/cluster-api-control-plane-provider-talos", ""},

	{provider.InfrastructureProviderType, "aws", "kubernetes-sigs/cluster-api-provider-aws", ""},
	{provider.InfrastructureProviderType, "azure", "kubernetes-sigs/cluster-api-provider-azure", ""},
	{provider.InfrastructureProviderType, "byoh", "vmware-tanzu/cluster-api-provider-bringyourownhost", ""},
	{provider.InfrastructureProviderType, "cloudscale-ch-cloudscale", "cloudscale-ch/cluster-api-provider-cloudscale", ""},
	{provider.InfrastructureProviderType, "cloudstack", "kubernetes-sigs/cluster-api-provider-cloudstack", ""},
	{provider.InfrastructureProviderType, "coxedge", "coxedge/cluster-api-provider-coxedge", ""},
	{provider.InfrastructureProviderType, "digitalocean", "kubernetes-sigs/cluster-api-provider-digitalocean", ""},
	{provider.InfrastructureProviderType, "docker", "kubernetes-sigs/cluster-api", "infrastructure-components-development.yaml"},
	{provider.InfrastructureProviderType, "gcp", "kubernetes-sigs/cluster-api-provider-gcp", ""},
	{provider.InfrastructureProviderType, "harvester-harvester", "rancher-sandbox/cluster-api-provider-harvester", ""},
	{provider.InfrastructureProviderType, "hetzner", "syself/cluster-api-provider-hetzner", ""},
	{provider.InfrastructureProviderType, "huawei", "HuaweiCloudDeveloper/cluster-api-provider-huawei", ""},
	{provider.InfrastructureProviderType, "ibmcloud", "kubernetes-sigs/cluster-api-provider-ibmcloud", ""},
	{provider.InfrastructureProviderType, "ionoscloud-ionoscloud", "ionos-cloud/cluster-api-provider-ionoscloud", ""},
	{provider.InfrastructureProviderType, "k0sproject-k0smotron", "k0sproject/k0smotron", ""},
	{provider.InfrastructureProviderType, "kairos-io-fleet", "kairos-io/cluster-api-provider-kairos-fleet", ""},
	{provider.InfrastructureProviderType, "kubekey", "kubesphere/kubekey", ""},
	{provider.InfrastructureProviderType, "kubeswift-io", "kubeswift-io/cluster-api-provider-kubeswift", ""},
	{provider.InfrastructureProviderType, "kubevirt", "kubernetes-sigs/cluster-api-provider-kubevirt", ""},
	{provider.InfrastructureProviderType, "linode-linode", "linode/cluster-api-provider-linode", ""},
	{provider.InfrastructureProviderType, "maas", "spectrocloud/cluster-api-provider-maas", ""},
	{provider.InfrastructureProviderType, "metal-stack", "metal-stack/cluster-api-provider-metal-stack", ""},
	{provider.InfrastructureProviderType, "metal3", "metal3-io/cluster-api-provider-metal3", ""},
	{provider.InfrastructureProviderType, "nested", "kubernetes-sigs/cluster-api-provider-nested", ""},
	{provider.InfrastructureProviderType, "nutanix", "nutanix-cloud-native/cluster-api-provider-nutanix", ""},
	{provider.InfrastructureProviderType, "oci", "oracle/cluster-api-provider-oci", ""},
	{provider.InfrastructureProviderType, "opennebula", "OpenNebula/cluster-api-provider-opennebula", ""},
	{provider.InfrastructureProviderType, "openstack", "kubernetes-sigs/cluster-api-provider-openstack", ""},
	{provider.InfrastructureProviderType, "outscale", "outscale/cluster-api-provider-outscale", ""},
	{provider.InfrastructureProviderType, "oxide", "oxidecomputer/cluster-api-provider-oxide", ""},
	{provider.InfrastructureProviderType, "proxmox", "ionos-cloud/cluster-api-provider-proxmox", ""},
	{provider.InfrastructureProviderType, "scaleway", "scaleway/cluster-api-provider-scaleway", ""},
	{provider.InfrastructureProviderType, "sidero", "siderolabs/sidero", ""},
	{provider.InfrastructureProviderType, "tinkerbell-tinkerbell", "tinkerbell/cluster-api-provider-tinkerbell", ""},
	{provider.InfrastructureProviderType, "vcd", "vmware/cluster-api-provider-cloud-director", ""},
	{provider.InfrastructureProviderType, "vcluster", "loft-sh/cluster-api-provider-vcluster", ""},
	{provider.InfrastructureProviderType, "virtink", "smartxworks/cluster-api-provider-virtink", ""},
	{provider.InfrastructureProviderType, "vsphere", "kubernetes-sigs/cluster-api-provider-vsphere", ""},
	{provider.InfrastructureProviderType, "vultr-vultr", "vultr/cluster-api-provider-vultr", ""},

	{provider.IPAMProviderType, "in-cluster", "kubernetes-sigs/cluster-api-ipam-provider-in-cluster", ""},
	{provider.IPAMProviderType, "metal3", "metal3-io/ip-address-manager", ""},
	{provider.IPAMProviderType, "nutanix", "nutanix-cloud-native/cluster-api-ipam-provider-nutanix", ""},

	{provider.RuntimeExtensionProviderType, "nutanix", "nutanix-cloud-native/cluster-api-runtime-extensions-nutanix", "runtime-extensions-components.yaml"},

	{provider.AddonProviderType, "eitco-cdk8s", "eitco/cluster-api-addon-provider-cdk8s", ""},
	{provider.AddonProviderType, "helm", "kubernetes-sigs/cluster-api-addon-provider-helm", ""},
	{provider.AddonProviderType, "rancher-fleet", "rancher/cluster-api-addon-provider-fleet", ""},
}

// BuiltinProviders returns clusterctl v1.14's built-in provider list, sorted by type order then name.
func BuiltinProviders() []Provider {
	out := make([]Provider, 0, len(builtins))
	for _, b := range builtins {
		file := b.file
		if file == "" {
			file = b.t.ComponentsFile()
		}
		out = append(out, Provider{Name: b.name, Type: b.t, URL: fmt.Sprintf(ghReleases, b.repo, file)})
	}
	sortProviders(out)
	return out
}

func sortProviders(ps []Provider) {
	provider.SortByTypeThenName(ps, func(p Provider) provider.Type { return p.Type }, func(p Provider) string { return p.Name })
}

// Registry is the set of known providers: the built-ins with the config file's `providers:` added
// or replacing built-ins of the same name and type.
type Registry struct {
	providers []Provider
}

// NewRegistry builds the registry from the built-ins and cfg's `providers:` (cfg may be nil).
func NewRegistry(cfg *config.Config) (*Registry, error) {
	ps := BuiltinProviders()
	if cfg != nil {
		user, err := cfg.Providers()
		if err != nil {
			return nil, err
		}
		for _, u := range user {
			p := Provider{Name: u.Name, Type: u.Type, URL: u.URL}
			replaced := false
			for i := range ps {
				if ps[i].Name == p.Name && ps[i].Type == p.Type {
					ps[i], replaced = p, true
					break
				}
			}
			if !replaced {
				ps = append(ps, p)
			}
		}
	}
	sortProviders(ps)
	return &Registry{providers: ps}, nil
}

// List returns every known provider, sorted by type order then name.
func (r *Registry) List() []Provider { return append([]Provider(nil), r.providers...) }

// UnknownProviderError is returned when no provider has the requested name and type.
type UnknownProviderError struct {
	Name    string
	Type    provider.Type
	Closest []string // names of the same type, closest first
	Other   []provider.Type
}

func (e *UnknownProviderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown %s %q", e.Type, e.Name)
	if len(e.Other) > 0 {
		ts := make([]string, len(e.Other))
		for i, t := range e.Other {
			ts[i] = string(t)
		}
		fmt.Fprintf(&b, " (a provider with that name exists as %s)", strings.Join(ts, ", "))
	}
	if len(e.Closest) > 0 {
		fmt.Fprintf(&b, "; closest known: %s", strings.Join(e.Closest, ", "))
	}
	b.WriteString("; see `capctl config repositories`, or add it under `providers:` in the config file")
	return b.String()
}

// Get returns the provider with the given name and type.
func (r *Registry) Get(name string, t provider.Type) (Provider, error) {
	name = strings.ToLower(name)
	var other []provider.Type
	for _, p := range r.providers {
		if p.Name == name {
			if p.Type == t {
				return p, nil
			}
			other = append(other, p.Type)
		}
	}
	var names []string
	for _, p := range r.providers {
		if p.Type == t {
			names = append(names, p.Name)
		}
	}
	return Provider{}, &UnknownProviderError{Name: name, Type: t, Closest: closest(name, names, 3), Other: other}
}

// closest returns up to n candidates nearest to s by edit distance (ties by name); candidates
// containing s or contained in it rank first. Far-off names are left out.
func closest(s string, candidates []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	var ss []scored
	for _, c := range candidates {
		d := levenshtein(s, c)
		if strings.Contains(c, s) || strings.Contains(s, c) {
			d = 0
		}
		limit := len(s)/2 + 2
		if d <= limit {
			ss = append(ss, scored{c, d})
		}
	}
	sort.SliceStable(ss, func(i, j int) bool {
		if ss[i].d != ss[j].d {
			return ss[i].d < ss[j].d
		}
		return ss[i].name < ss[j].name
	})
	var out []string
	for i := 0; i < len(ss) && i < n; i++ {
		out = append(out, ss[i].name)
	}
	return out
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
