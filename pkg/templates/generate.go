package templates

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
	"github.com/capctl/capctl/pkg/variables"
)

// Built-in variables that `generate cluster` sets from its argument and flags.
const (
	VarClusterName              = "CLUSTER_NAME"
	VarNamespace                = "NAMESPACE"
	VarKubernetesVersion        = "KUBERNETES_VERSION"
	VarControlPlaneMachineCount = "CONTROL_PLANE_MACHINE_COUNT"
	VarWorkerMachineCount       = "WORKER_MACHINE_COUNT"
)

// BuiltinVariables are the variables `generate cluster` sets itself.
var BuiltinVariables = []string{VarClusterName, VarNamespace, VarKubernetesVersion, VarControlPlaneMachineCount, VarWorkerMachineCount}

// DefaultConfigMapKey is the data key --from-config-map reads by default.
const DefaultConfigMapKey = "template"

// Source says where a cluster template comes from. Exactly one of the three forms is used: From
// (a file, URL or "-"), ConfigMap, or a provider repository (Infrastructure, Flavor).
type Source struct {
	From string

	ConfigMap          string
	ConfigMapNamespace string
	ConfigMapKey       string

	// Infrastructure is the provider reference (name[:version]); empty: the single infrastructure
	// provider of the management cluster's inventory.
	Infrastructure string
	Flavor         string
}

// ClusterRequest is `generate cluster`.
type ClusterRequest struct {
	Source          Source
	TargetNamespace string
	// Lookup gives variable values, built-ins included (the caller layers flags, values file,
	// environment and config).
	Lookup   variables.Lookup
	ListOnly bool
	Fetch    FetchOptions
	// Repository is needed for the provider-repository source.
	Repository *repository.Client
	// Cluster is the management cluster, or nil when none is reachable.
	Cluster client.Client
}

// ClusterResult is what GenerateCluster produced.
type ClusterResult struct {
	*Result
	// TemplateName is the file or URL the template came from.
	TemplateName string
	// Provider and Version are set for the provider-repository source.
	Provider string
	Version  string
}

// ErrNoDefaultInfrastructure: --infrastructure was not given and the inventory cannot tell.
var ErrNoDefaultInfrastructure = errors.New("cannot tell the default infrastructure provider")

// FlavorNotFoundError says a provider version has no template for a flavor.
type FlavorNotFoundError struct {
	Provider, Version, Flavor, File string
	// Available lists the flavors the version has ("" is the default template); nil when the
	// repository cannot list its files.
	Available []string
	Listed    bool
}

func (e *FlavorNotFoundError) Error() string {
	what := fmt.Sprintf("flavor %q", e.Flavor)
	if e.Flavor == "" {
		what = "default template"
	}
	msg := fmt.Sprintf("%s %s has no %s (file %s)", e.Provider, e.Version, what, e.File)
	switch {
	case !e.Listed:
		return msg + "; check the flavors in the provider's release assets"
	case len(e.Available) == 0:
		return msg + "; this provider version publishes no cluster templates (use --from with a template of your own)"
	}
	var names []string
	for _, f := range e.Available {
		if f == "" {
			names = append(names, "(default, no --flavor)")
		} else {
			names = append(names, f)
		}
	}
	return msg + "; available flavors: " + strings.Join(names, ", ")
}

// GenerateCluster fetches the template from its source, includes the ClusterClasses it needs
// (provider-repository source only, as clusterctl does) and renders it.
func GenerateCluster(ctx context.Context, req ClusterRequest) (*ClusterResult, error) {
	src := req.Source
	in := Input{TargetNamespace: req.TargetNamespace, Lookup: req.Lookup, ListOnly: req.ListOnly}
	if req.Cluster != nil {
		in.Cluster = req.Cluster
	}
	out := &ClusterResult{}
	switch {
	case src.From != "":
		b, name, err := Fetch(ctx, src.From, req.Fetch)
		if err != nil {
			return nil, err
		}
		in.Template, in.Name = b, name
	case src.ConfigMap != "":
		if req.Cluster == nil {
			return nil, errors.New("--from-config-map needs a reachable management cluster")
		}
		b, name, err := FromConfigMap(ctx, req.Cluster, src.ConfigMapNamespace, src.ConfigMap, src.ConfigMapKey)
		if err != nil {
			return nil, err
		}
		in.Template, in.Name = b, name
	default:
		if req.Repository == nil {
			return nil, errors.New("no provider repository client")
		}
		rel, err := resolveInfrastructure(ctx, req)
		if err != nil {
			return nil, err
		}
		p, version := rel.Provider, rel.Version
		file := TemplateFile(src.Flavor)
		b, err := req.Repository.GetFile(ctx, p, version, file)
		if err != nil {
			if errors.Is(err, repository.ErrNotFound) {
				e := &FlavorNotFoundError{Provider: p.Name, Version: version, Flavor: src.Flavor, File: file}
				if files, lerr := req.Repository.ListFiles(ctx, p, version); lerr == nil {
					e.Available, e.Listed = FlavorsOf(files), true
				}
				return nil, e
			}
			return nil, err
		}
		in.Template, in.Name = b, p.ManifestLabel()+"/"+version+"/"+file
		in.ClusterClass = func(ctx context.Context, class string) ([]byte, string, error) {
			f := ClusterClassFile(class)
			b, err := req.Repository.GetFile(ctx, p, version, f)
			if err != nil {
				return nil, "", err
			}
			return b, p.ManifestLabel() + "/" + version + "/" + f, nil
		}
		out.Provider, out.Version = p.Name, version
	}
	out.TemplateName = in.Name
	res, err := Render(ctx, in)
	out.Result = res
	if err != nil {
		return out, err
	}
	return out, nil
}

// TemplateFile is the repository file of a flavor: cluster-template.yaml or
// cluster-template-FLAVOR.yaml.
func TemplateFile(flavor string) string {
	if flavor == "" {
		return "cluster-template.yaml"
	}
	return "cluster-template-" + flavor + ".yaml"
}

// ClusterClassFile is the repository file of a ClusterClass: clusterclass-NAME.yaml.
func ClusterClassFile(name string) string { return "clusterclass-" + name + ".yaml" }

// resolveInfrastructure picks the infrastructure provider and version: the flag, else the single
// infrastructure provider (and its version) in the management cluster's inventory; without a
// version, the repository's (latest) version.
func resolveInfrastructure(ctx context.Context, req ClusterRequest) (*repository.Release, error) {
	name, version := "", ""
	if req.Source.Infrastructure != "" {
		ref, err := provider.ParseReference(req.Source.Infrastructure, false)
		if err != nil {
			return nil, err
		}
		name, version = ref.Name, ref.Version
	}
	if name == "" || version == "" {
		if req.Cluster == nil {
			if name == "" {
				return nil, fmt.Errorf("%w: no management cluster is reachable; pass --infrastructure NAME[:VERSION]", ErrNoDefaultInfrastructure)
			}
		} else {
			items, err := inventory.List(ctx, req.Cluster)
			if err != nil {
				return nil, fmt.Errorf("reading the provider inventory: %w", err)
			}
			if name == "" {
				name = inventory.DefaultProviderName(items, provider.InfrastructureProviderType)
				if name == "" {
					return nil, fmt.Errorf("%w: the management cluster has %s; pass --infrastructure NAME[:VERSION]", ErrNoDefaultInfrastructure, countInfra(items))
				}
			}
			if version == "" {
				versions := map[string]bool{}
				for _, p := range items {
					if p.Type == provider.InfrastructureProviderType && p.ProviderName == name {
						versions[p.Version] = true
					}
				}
				if len(versions) == 1 {
					for v := range versions {
						version = v
					}
				}
			}
		}
	}
	p, err := req.Repository.Provider(name, provider.InfrastructureProviderType)
	if err != nil {
		return nil, err
	}
	rel, err := req.Repository.Resolve(ctx, p, version, repository.ResolveOptions{})
	if err != nil {
		return nil, err
	}
	return rel, nil
}

func countInfra(items []inventory.Provider) string {
	names := map[string]bool{}
	for _, p := range items {
		if p.Type == provider.InfrastructureProviderType {
			names[p.ProviderName] = true
		}
	}
	if len(names) == 0 {
		return "no infrastructure provider installed"
	}
	var list []string
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	return "several infrastructure providers (" + strings.Join(list, ", ") + ")"
}

// FlavorsOf turns a provider version's file names into its flavors ("" is the default template
// cluster-template.yaml), sorted.
func FlavorsOf(files []string) []string {
	var out []string
	for _, n := range files {
		switch {
		case n == "cluster-template.yaml":
			out = append(out, "")
		case strings.HasPrefix(n, "cluster-template-") && strings.HasSuffix(n, ".yaml"):
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(n, "cluster-template-"), ".yaml"))
		}
	}
	sort.Strings(out)
	return out
}

// FlavorList is the answer of ListFlavors.
type FlavorList struct {
	Provider string   `json:"provider"`
	Version  string   `json:"version"`
	Flavors  []string `json:"flavors"` // "" is the default template
}

// ListFlavors lists the flavors of the infrastructure provider version req would use.
func ListFlavors(ctx context.Context, req ClusterRequest) (*FlavorList, error) {
	if req.Repository == nil {
		return nil, errors.New("no provider repository client")
	}
	rel, err := resolveInfrastructure(ctx, req)
	if err != nil {
		return nil, err
	}
	files, err := req.Repository.ListFiles(ctx, rel.Provider, rel.Version)
	if err != nil {
		return nil, err
	}
	return &FlavorList{Provider: rel.Provider.Name, Version: rel.Version, Flavors: FlavorsOf(files)}, nil
}

// FromConfigMap reads a template from a ConfigMap's data key.
func FromConfigMap(ctx context.Context, c client.Reader, namespace, name, key string) ([]byte, string, error) {
	if key == "" {
		key = DefaultConfigMapKey
	}
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", fmt.Errorf("ConfigMap %s/%s not found (check --from-config-map and --from-config-map-namespace)", namespace, name)
		}
		return nil, "", fmt.Errorf("reading ConfigMap %s/%s: %w", namespace, name, err)
	}
	v, ok := cm.Data[key]
	if !ok {
		keys := make([]string, 0, len(cm.Data))
		for k := range cm.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return nil, "", fmt.Errorf("the ConfigMap %s/%s does not have the %q data key (keys: %s); use --from-config-map-key", namespace, name, key, strings.Join(keys, ", "))
	}
	return []byte(v), fmt.Sprintf("ConfigMap %s/%s key %s", namespace, name, key), nil
}
