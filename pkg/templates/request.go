package templates

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
	"github.com/capctl/capctl/pkg/variables"
	"github.com/capctl/capctl/pkg/versions"
)

// ClusterRequest is `generate cluster` as the user asked for it: the argument and flags, and
// what the run has at hand (config, kubeconfig, ways to reach the cluster and repositories).
// Every default (namespace, machine counts, Kubernetes version, variables) is resolved from it
// by Resolve, the one place both generating and --list-variables read them from.
type ClusterRequest struct {
	// Name is the cluster name (CLUSTER_NAME).
	Name   string
	Source Source
	// KubernetesVersion is --kubernetes-version; empty: the environment or config, else the
	// template's.
	KubernetesVersion string
	// ControlPlaneMachineCount and WorkerMachineCount are the flags; nil when not given (the
	// environment or config may set them, else 1 and 0).
	ControlPlaneMachineCount *int64
	WorkerMachineCount       *int64
	// TargetNamespace is --target-namespace; empty: the kubeconfig context's, else default.
	TargetNamespace string
	Values          Values
	// ListVariables lists the template's variables instead of substituting them.
	ListVariables bool

	// Kubeconfig selects the management cluster; its context's namespace is read from the file
	// (no connection).
	Kubeconfig cluster.Options
	Stdin      io.Reader
	HTTPClient *http.Client

	// What the run has at hand, taken from the env.Env by the verb (withEnv): the configuration
	// (nil: none), the management cluster (reached on first use; nil: none), the provider
	// repositories, and the logger (one-line warnings at level 0 — the management cluster could
	// not be consulted, a token withheld — and details at level 1; nil discards).
	cfg        *config.Config
	dial       func(context.Context) (client.Client, error)
	repository func(context.Context) (*repository.Client, error)
	logger     *logging.Logger
}

// withEnv is req with what the run's Env has: its configuration (read now; none is no error),
// its management cluster and provider repositories (reached on first use), its logger.
func (r ClusterRequest) withEnv(ctx context.Context, e env.Env) (ClusterRequest, error) {
	cfg, err := configOf(ctx, e)
	if err != nil {
		return r, err
	}
	r.cfg, r.logger = cfg, e.Log
	if e.Dial != nil || len(e.Management) > 0 {
		r.dial = func(ctx context.Context) (client.Client, error) {
			c, err := e.Cluster(ctx)
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	if e.Repository != nil {
		r.repository = e.Repository
	}
	return r, nil
}

// configOf is the run's configuration, nil when the Env has none.
func configOf(ctx context.Context, e env.Env) (*config.Config, error) {
	if e.Config == nil {
		return nil, nil
	}
	return e.Config(ctx)
}

// builtinFlags names the flag that sets each built-in variable (they cannot be --set).
var builtinFlags = map[string]string{
	VarClusterName:              "the cluster name argument",
	VarNamespace:                "--target-namespace",
	VarKubernetesVersion:        "--kubernetes-version",
	VarControlPlaneMachineCount: "--control-plane-machine-count",
	VarWorkerMachineCount:       "--worker-machine-count",
}

// Validate checks every input that needs no file, network or cluster (Resolve reads the
// --values file and the kubeconfig).
func (r *ClusterRequest) Validate() error {
	if errs := validation.IsDNS1123Label(r.Name); len(errs) > 0 {
		return inputErrorf("invalid cluster name %q: %s", r.Name, strings.Join(errs, "; "))
	}
	if err := r.Source.validate(); err != nil {
		return err
	}
	if r.KubernetesVersion != "" {
		v, _, err := versions.Kubernetes(r.KubernetesVersion)
		if err != nil {
			return inputErrorf("invalid --kubernetes-version %q: use a semantic version like v1.34.1", r.KubernetesVersion)
		}
		r.KubernetesVersion = v // written into the template as v1.34.1 however it was typed
	}
	if c := r.ControlPlaneMachineCount; c != nil && *c < 1 {
		return inputErrorf("invalid --control-plane-machine-count %d: use a number >= 1", *c)
	}
	if c := r.WorkerMachineCount; c != nil && *c < 0 {
		return inputErrorf("invalid --worker-machine-count %d: use a number >= 0", *c)
	}
	if r.TargetNamespace != "" {
		if errs := validation.IsDNS1123Label(r.TargetNamespace); len(errs) > 0 {
			return inputErrorf("invalid --target-namespace %q: %s", r.TargetNamespace, strings.Join(errs, "; "))
		}
	}
	_, err := r.Values.parseSet(builtinFlags)
	return err
}

func (s Source) validate() error {
	sources := 0
	for _, v := range []string{s.From, s.ConfigMap} {
		if v != "" {
			sources++
		}
	}
	if sources > 1 {
		return inputErrorf("invalid cluster template source: only one of --from and --from-config-map can be used")
	}
	if sources == 1 && (s.Infrastructure != "" || s.Flavor != "") {
		return inputErrorf("invalid cluster template source: --infrastructure/--flavor pick a provider template and cannot be combined with --from or --from-config-map")
	}
	if s.ConfigMap == "" && (s.ConfigMapNamespace != "" || (s.ConfigMapKey != "" && s.ConfigMapKey != DefaultConfigMapKey)) {
		return inputErrorf("--from-config-map-namespace and --from-config-map-key need --from-config-map")
	}
	if s.Infrastructure != "" {
		if _, err := provider.ParseReference(s.Infrastructure, false); err != nil {
			return inputErrorf("--infrastructure: %v", err)
		}
	}
	if s.Flavor != "" {
		if errs := validation.IsDNS1123Subdomain(s.Flavor); len(errs) > 0 || strings.Contains(s.Flavor, "/") {
			return inputErrorf("invalid --flavor %q: a flavor is a name like development", s.Flavor)
		}
	}
	return nil
}

// repositorySource reports a template taken from a provider repository (no --from, no ConfigMap).
func (s Source) repositorySource() bool { return s.From == "" && s.ConfigMap == "" }

// Resolved are the values a request resolves to: what generation substitutes and what
// --list-variables shows.
type Resolved struct {
	Namespace string
	// NamespaceFrom says where Namespace came from: --target-namespace, the kubeconfig
	// context, or the default.
	NamespaceFrom string
	// KubernetesVersion is the flag's, else the environment's or config file's; empty: the
	// template's default (or a missing variable).
	KubernetesVersion        string
	ControlPlaneMachineCount int64
	WorkerMachineCount       int64
	// ConfigMapNamespace is where --from-config-map is read.
	ConfigMapNamespace string
	// NeedsCluster: the request cannot work without the management cluster (a ConfigMap
	// source, or no --infrastructure to default). ConsultsCluster: it asks the management
	// cluster when reachable (inventory version, ClusterClass presence).
	NeedsCluster    bool
	ConsultsCluster bool
	// Lookup gives every variable's value: the built-ins above, then --set, --values, the
	// environment and the config file.
	Lookup variables.Lookup
}

// Namespace sources.
const (
	NamespaceFromFlag       = "--target-namespace"
	NamespaceFromKubeconfig = "the kubeconfig context's namespace"
	NamespaceFromDefault    = "no namespace in the kubeconfig context"
)

// Resolve computes the values of the request with the configuration cfg (nil: none). It reads
// the --values file and the kubeconfig file but reaches no server.
func (r *ClusterRequest) Resolve(cfg *config.Config) (*Resolved, error) {
	vals, err := r.Values.parse(builtinFlags)
	if err != nil {
		return nil, err
	}
	user := vals.userLookup(cfg)
	// The kubeconfig context's namespace is the default namespace (no network needed); a
	// kubeconfig that does not load means no management cluster to consult.
	_, _, _, kubeNS, kerr := cluster.LoadRESTConfig(r.Kubeconfig)
	res := &Resolved{Namespace: cluster.NamespaceOr(r.TargetNamespace, kubeNS)}
	switch {
	case r.TargetNamespace != "":
		res.NamespaceFrom = NamespaceFromFlag
	case kubeNS != "":
		res.NamespaceFrom = NamespaceFromKubeconfig
	default:
		res.NamespaceFrom = NamespaceFromDefault
	}
	if r.Source.ConfigMap != "" {
		res.ConfigMapNamespace = cluster.NamespaceOr(r.Source.ConfigMapNamespace, kubeNS)
	}
	res.KubernetesVersion = r.KubernetesVersion
	if res.KubernetesVersion == "" {
		res.KubernetesVersion, _ = user(VarKubernetesVersion)
	}
	if res.ControlPlaneMachineCount, err = machineCount(r.ControlPlaneMachineCount, user, VarControlPlaneMachineCount, 1, 1); err != nil {
		return nil, err
	}
	if res.WorkerMachineCount, err = machineCount(r.WorkerMachineCount, user, VarWorkerMachineCount, 0, 0); err != nil {
		return nil, err
	}
	repo := r.Source.repositorySource()
	res.NeedsCluster = r.Source.ConfigMap != "" || (repo && r.Source.Infrastructure == "")
	res.ConsultsCluster = res.NeedsCluster || (repo && kerr == nil)

	builtins := map[string]string{
		VarClusterName:              r.Name,
		VarNamespace:                res.Namespace,
		VarControlPlaneMachineCount: strconv.FormatInt(res.ControlPlaneMachineCount, 10),
		VarWorkerMachineCount:       strconv.FormatInt(res.WorkerMachineCount, 10),
	}
	if res.KubernetesVersion != "" {
		builtins[VarKubernetesVersion] = res.KubernetesVersion
	}
	res.Lookup = variables.Chain(variables.FromMap(builtins), user)
	return res, nil
}

// machineCount is the flag's value, else the environment's or config file's, else def.
func machineCount(flag *int64, user variables.Lookup, name string, def, min int64) (int64, error) {
	if flag != nil {
		return *flag, nil
	}
	s, ok := user(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < min {
		return 0, fmt.Errorf("invalid %s %q from the environment or config: use a number >= %d (or pass %s)", name, s, min, builtinFlags[name])
	}
	return n, nil
}

// fetchOptions are the options of Fetch for this request; the raw-content host override is a
// config value (environment or file).
func (r *ClusterRequest) fetchOptions() FetchOptions {
	return fetchOptions(r.cfg, r.Stdin, r.HTTPClient, r.logger)
}

func fetchOptions(cfg *config.Config, stdin io.Reader, hc *http.Client, log *logging.Logger) FetchOptions {
	o := FetchOptions{Stdin: stdin, HTTPClient: hc, Log: log}
	if cfg != nil {
		o.GitHubToken = cfg.GitHubToken()
		o.RawGitHubURL, _ = cfg.Lookup(config.GitHubRawURLKey)
	}
	return o
}

func (r *ClusterRequest) warn(msg string) {
	if r.logger != nil {
		r.logger.Info(strings.Join(strings.Fields(msg), " "))
	}
}

func (r *ClusterRequest) log(msg string, kv ...any) {
	if r.logger != nil {
		r.logger.V(1).Info(msg, kv...)
	}
}
