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

	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
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

// ClusterResult is what GenerateCluster produced.
type ClusterResult struct {
	*Result
	// Resolved are the values the request resolved to.
	Resolved *Resolved
	// Listing is set with ListVariables: the variables with the values generation would use.
	Listing *VariableListing
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

// GenerateCluster resolves the request, fetches the template from its source, includes the
// ClusterClasses it needs (provider-repository source only, as clusterctl does) and renders it;
// with ListVariables it lists the variables instead, with the values generation would use.
func GenerateCluster(ctx context.Context, e env.Env, req ClusterRequest) (*ClusterResult, error) {
	req, err := req.withEnv(ctx, e)
	if err != nil {
		return nil, err
	}
	p, err := req.prepare(ctx)
	if err != nil {
		return nil, err
	}
	in := Input{TargetNamespace: p.resolved.Namespace, Lookup: p.resolved.Lookup, ListOnly: req.ListVariables}
	if p.cluster != nil {
		in.Cluster = p.cluster
	}
	out := &ClusterResult{Resolved: p.resolved}
	if err := p.source(ctx, &req, &in, out); err != nil {
		return nil, err
	}
	out.TemplateName = in.Name
	if out.Provider != "" {
		req.log("Using template", "provider", out.Provider, "version", out.Version, "file", out.TemplateName)
	}
	res, err := Render(ctx, in)
	out.Result = res
	if err != nil {
		return out, missingVariables(err, " (see --list-variables)")
	}
	for _, c := range res.ExistingClasses {
		req.log("ClusterClass already in the management cluster, not emitted", "clusterClass", c.String())
	}
	if req.ListVariables {
		out.Listing = listVariables(res.Variables, &req, p.resolved)
	}
	return out, nil
}

// prepared is a resolved request with its management cluster (nil when none) and repository.
type prepared struct {
	src      Source
	resolved *Resolved
	cluster  client.Client
	repo     *repository.Client
}

// prepare validates and resolves the request, then reaches what it needs: the management
// cluster (required, or consulted when reachable, with a one-line warning when not) and the
// provider repositories.
func (r *ClusterRequest) prepare(ctx context.Context) (*prepared, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	res, err := r.Resolve(r.cfg)
	if err != nil {
		return nil, err
	}
	p := &prepared{src: r.Source, resolved: res}
	p.src.ConfigMapNamespace = res.ConfigMapNamespace
	if res.ConsultsCluster {
		if p.cluster, err = r.connect(ctx, res); err != nil {
			return nil, err
		}
	}
	if r.Source.repositorySource() {
		if r.repository == nil {
			return nil, errors.New("no provider repository client")
		}
		if p.repo, err = r.repository(ctx); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// connect reaches the management cluster. Unreachable is an error when it is needed, else a
// warning: the output is made without it (no inventory version, no ClusterClass lookup).
func (r *ClusterRequest) connect(ctx context.Context, res *Resolved) (client.Client, error) {
	var c client.Client
	err := errors.New("no management cluster connection")
	if r.dial != nil {
		c, err = r.dial(ctx)
	}
	switch {
	case err == nil:
		return c, nil
	case r.Source.ConfigMap != "":
		return nil, fmt.Errorf("--from-config-map needs the management cluster: %w", err)
	case res.NeedsCluster:
		return nil, fmt.Errorf("%w: no management cluster to find it in (%v): pass --infrastructure NAME[:VERSION]", ErrNoDefaultInfrastructure, err)
	}
	r.warn(fmt.Sprintf("Warning: the management cluster was not consulted (its provider versions and ClusterClasses were not looked up; the output may include a ClusterClass it already has): %v", err))
	return nil, nil
}

// source fetches the template (and, for a provider repository, says how to fetch its
// ClusterClasses) into in.
func (p *prepared) source(ctx context.Context, req *ClusterRequest, in *Input, out *ClusterResult) error {
	var err error
	switch {
	case p.src.From != "":
		in.Template, in.Name, err = Fetch(ctx, p.src.From, req.fetchOptions())
		return err
	case p.src.ConfigMap != "":
		in.Template, in.Name, err = FromConfigMap(ctx, p.cluster, p.src.ConfigMapNamespace, p.src.ConfigMap, p.src.ConfigMapKey)
		return err
	}
	rel, err := resolveInfrastructure(ctx, p)
	if err != nil {
		return err
	}
	prov, version := rel.Provider, rel.Version
	file := TemplateFile(p.src.Flavor)
	b, err := p.repo.GetFile(ctx, prov, version, file)
	if errors.Is(err, repository.ErrNotFound) {
		e := &FlavorNotFoundError{Provider: prov.Name, Version: version, Flavor: p.src.Flavor, File: file}
		if files, lerr := p.repo.ListFiles(ctx, prov, version); lerr == nil {
			e.Available, e.Listed = FlavorsOf(files), true
		}
		return e
	}
	if err != nil {
		return err
	}
	in.Template, in.Name = b, prov.ManifestLabel()+"/"+version+"/"+file
	in.ClusterClass = func(ctx context.Context, class string) ([]byte, string, error) {
		f := ClusterClassFile(class)
		b, err := p.repo.GetFile(ctx, prov, version, f)
		if err != nil {
			return nil, "", err
		}
		return b, prov.ManifestLabel() + "/" + version + "/" + f, nil
	}
	out.Provider, out.Version = prov.Name, version
	return nil
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
func resolveInfrastructure(ctx context.Context, req *prepared) (*repository.Release, error) {
	name, version := "", ""
	if req.src.Infrastructure != "" {
		ref, err := provider.ParseReference(req.src.Infrastructure, false)
		if err != nil {
			return nil, err
		}
		name, version = ref.Name, ref.Version
	}
	if name == "" || version == "" {
		if req.cluster == nil {
			if name == "" {
				return nil, fmt.Errorf("%w: no management cluster is reachable; pass --infrastructure NAME[:VERSION]", ErrNoDefaultInfrastructure)
			}
		} else {
			items, err := inventory.List(ctx, req.cluster)
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
	p, err := req.repo.Provider(name, provider.InfrastructureProviderType)
	if err != nil {
		return nil, err
	}
	rel, err := req.repo.Resolve(ctx, p, version, repository.ResolveOptions{})
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
func ListFlavors(ctx context.Context, e env.Env, req ClusterRequest) (*FlavorList, error) {
	if !req.Source.repositorySource() || req.Source.Flavor != "" || req.ListVariables {
		return nil, inputErrorf("--list-flavors lists a provider's templates: it cannot be combined with --from, --from-config-map, --flavor or --list-variables")
	}
	req, err := req.withEnv(ctx, e)
	if err != nil {
		return nil, err
	}
	p, err := req.prepare(ctx)
	if err != nil {
		return nil, err
	}
	rel, err := resolveInfrastructure(ctx, p)
	if err != nil {
		return nil, err
	}
	files, err := p.repo.ListFiles(ctx, rel.Provider, rel.Version)
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
