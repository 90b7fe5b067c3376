package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/repository"
)

// globalOptions are the persistent flags every command has.
type globalOptions struct {
	kubeconfig        string
	kubeconfigContext string
	configPath        string
	verbosity         int
	connectTimeout    time.Duration
}

// factory hands commands what they need (streams, config, cluster client, logger), built lazily
// and once per run, so a command that needs no cluster never touches one.
type factory struct {
	IO     *iostreams.IOStreams
	global *globalOptions

	configOnce sync.Once
	cfg        *config.Config
	cfgErr     error

	clusterMu sync.Mutex
	clusterC  *cluster.Client

	// clientGuard, when set, is asked before any cluster or repository client is built; tests
	// that parse flags set it to fail, which proves that parsing touches no cluster.
	clientGuard func(what string) error
}

// guard asks clientGuard (tests) whether a client for what may be built.
func (f *factory) guard(what string) error {
	if f.clientGuard == nil {
		return nil
	}
	return f.clientGuard(what)
}

func newFactory(io *iostreams.IOStreams) *factory {
	return &factory{IO: io, global: &globalOptions{}}
}

// Config loads the configuration file once.
func (f *factory) Config(ctx context.Context) (*config.Config, error) {
	f.configOnce.Do(func() {
		f.cfg, f.cfgErr = config.Load(ctx, config.Options{Path: f.global.configPath})
	})
	return f.cfg, f.cfgErr
}

// Logger returns a logger to stderr at the chosen verbosity; with -v 0 the environment variable
// CAPCTL_LOG_LEVEL (or clusterctl's CLUSTERCTL_LOG_LEVEL) may raise it.
func (f *factory) Logger() *logging.Logger {
	v := f.global.verbosity
	if v == 0 {
		if n, ok := config.EnvLogLevel(nil); ok {
			v = n
		}
	}
	return logging.New(f.IO.ErrOut, v)
}

// ClusterOptions are the options that select the management cluster.
func (f *factory) ClusterOptions() cluster.Options {
	return cluster.Options{
		Kubeconfig:     f.global.kubeconfig,
		Context:        f.global.kubeconfigContext,
		ConnectTimeout: f.global.connectTimeout,
	}
}

// Cluster connects to the management cluster once per run (checking it answers).
func (f *factory) Cluster(ctx context.Context) (*cluster.Client, error) {
	f.clusterMu.Lock()
	defer f.clusterMu.Unlock()
	if f.clusterC != nil {
		return f.clusterC, nil
	}
	if err := f.guard("the management cluster"); err != nil {
		return nil, err
	}
	c, err := cluster.Connect(ctx, f.ClusterOptions())
	if err != nil {
		return nil, err
	}
	f.clusterC = c
	return c, nil
}

// Members connects to every management cluster the selection names (the kubeconfig of
// --kubeconfig, else the KUBECONFIG list as client-go merges it).
func (f *factory) Members(ctx context.Context, sel multicluster.Selection) ([]multicluster.Member, error) {
	if err := f.guard("the management clusters of --contexts/--all-contexts"); err != nil {
		return nil, err
	}
	opts := f.ClusterOptions()
	opts.Context = ""
	return multicluster.Open(ctx, opts, sel)
}

// deps are what a command's run needs from the factory, as fields so that a test can call run
// with its own streams and clients (gh's pattern). Commands fill them with f.deps().
type deps struct {
	IO     *iostreams.IOStreams
	Config func(context.Context) (*config.Config, error)
	// Cluster connects to the management cluster; OptionalCluster returns nil when none is named
	// and the default kubeconfig does not answer.
	Cluster         func(context.Context) (*cluster.Client, error)
	OptionalCluster func(context.Context) (*cluster.Client, error)
	// Repository builds the provider repository client (offline: no network at all).
	Repository func(ctx context.Context, offline bool) (*repository.Client, error)
	Logger     func() *logging.Logger
	// ClusterOptions select the management cluster (the global flags): for requests that
	// connect by themselves (move) or read the kubeconfig (generate cluster).
	ClusterOptions func() cluster.Options
	// Members connects to the management clusters of --contexts/--all-contexts.
	Members func(context.Context, multicluster.Selection) ([]multicluster.Member, error)
}

func (f *factory) deps() deps {
	return deps{
		IO: f.IO, Config: f.Config, Cluster: f.Cluster,
		OptionalCluster: f.OptionalCluster, Repository: f.repositoryClient, Logger: f.Logger,
		Members: f.Members, ClusterOptions: f.ClusterOptions,
	}
}

// env opens the Env of a run: the management cluster, or those sel chooses, with the
// configuration's provider repositories built on first use.
func (d deps) env(ctx context.Context, sel multicluster.Selection) (env.Env, error) {
	e, err := env.Open(ctx, sel, d.Cluster, d.Members)
	if err != nil {
		return env.Env{}, err
	}
	d.wire(&e)
	return e, nil
}

// optionalEnv is env for a verb that can work without a management cluster: the one the
// kubeconfig names, or none when none is named and the default does not answer.
func (d deps) optionalEnv(ctx context.Context) (env.Env, error) {
	c, err := d.OptionalCluster(ctx)
	if err != nil {
		return env.Env{}, err
	}
	var e env.Env
	if c != nil {
		e = env.One(c)
	}
	d.wire(&e)
	return e, nil
}

// wire gives e the run's configuration and provider repositories, each read on first use.
func (d deps) wire(e *env.Env) {
	e.Config = d.Config
	e.Repository = func(ctx context.Context) (*repository.Client, error) { return d.Repository(ctx, false) }
}

// OptionalCluster connects when a management cluster is named (--kubeconfig or
// --kubeconfig-context: then failures are errors) or a default kubeconfig answers; otherwise it
// returns nil.
func (f *factory) OptionalCluster(ctx context.Context) (*cluster.Client, error) {
	explicit := f.global.kubeconfig != "" || f.global.kubeconfigContext != ""
	c, err := f.Cluster(ctx)
	if err == nil {
		return c, nil
	}
	if explicit {
		return nil, err
	}
	if errors.Is(err, cluster.ErrUnreachable) || errors.Is(err, cluster.ErrUnauthorized) || errors.Is(err, cluster.ErrUntrusted) {
		fmt.Fprintf(f.IO.ErrOut, "Note: %v\n", err)
	}
	return nil, nil
}

// usageError marks errors that should print the command's usage (wrong arguments).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usageErrorf(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }
