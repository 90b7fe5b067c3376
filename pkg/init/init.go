package clusterinit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

// DefaultWaitProviderTimeout is clusterctl's --wait-provider-timeout default (300 s).
const DefaultWaitProviderTimeout = 5 * time.Minute

// InitRequest are init's inputs besides the clients.
type InitRequest struct {
	Selection
	// TargetNamespace overrides every provider's namespace in this run.
	TargetNamespace string
	// WaitProviders waits for Deployments, webhook endpoints and CA injection (capctl default: true).
	WaitProviders       bool
	WaitProviderTimeout time.Duration
	// StrictChecks refuses on the contract and uniqueness checks (--validate, default true); false
	// logs and ignores them.
	StrictChecks bool
	// DryRun: server-side dry run of every write; no inventory is written.
	DryRun bool
	Log    *logging.Logger
	// OnPlan is called with the resolved providers before anything is installed.
	OnPlan func(plan []Planned)
	// WaitInterval between readiness checks (default 1 s; tests use less).
	WaitInterval time.Duration
	// OnApplied is passed to install.Apply for every provider (progress, fault-injection in tests).
	OnApplied func(p Planned, ref install.ObjectRef, done, total int)
	// OnLocked is called once the init lock is held, before the first write (tests hold an init
	// there to race a second one against it).
	OnLocked func()
}

// Clients are what Init talks to. Cluster is required by Init (not by ListImages).
type Clients struct {
	Cluster *cluster.Client
	Repo    *repository.Client
	Config  *config.Config
}

// Action says what init did (or would do) with a provider.
type Action string

const (
	ActionInstall      Action = "install"
	ActionInstalled    Action = "installed"
	ActionAlreadyThere Action = "already-installed"
	ActionWouldInstall Action = "would-install"
)

// Planned is one provider of this run, resolved.
type Planned struct {
	Name      string        `json:"name"`
	Type      provider.Type `json:"type"`
	Version   string        `json:"version"`
	Namespace string        `json:"namespace"`
	Contract  string        `json:"contract"`
	Action    Action        `json:"action"`
	// Default: added because this is a first run and the type was not named.
	Default bool `json:"default,omitempty"`
	// Objects applied (or that a dry run would apply), and how many a dry run could not check.
	Objects   int      `json:"objects,omitempty"`
	Unchecked int      `json:"unchecked,omitempty"`
	Images    []string `json:"images,omitempty"`
	Source    string   `json:"source,omitempty"`

	components *repository.Components
}

// Label is the provider's manifest label (`bootstrap-kubeadm`).
func (p Planned) Label() string { return provider.ManifestLabel(p.Name, p.Type) }

// Result is what Init did.
type Result struct {
	FirstRun    bool                `json:"firstRun"`
	DryRun      bool                `json:"dryRun,omitempty"`
	Providers   []Planned           `json:"providers"`
	CertManager *certmanager.Result `json:"certManager,omitempty"`
	// NoOp: every requested provider was already installed at the requested version.
	NoOp bool `json:"noOp"`
	// Waited: providers were waited for and are ready.
	Waited   bool          `json:"waited"`
	Duration time.Duration `json:"duration"`
}

// IncompleteError is a failure after some things were installed. It says what is there and how
// to complete the installation.
type IncompleteError struct {
	Installed []Planned
	Partial   []Planned // providers partly applied (not recorded)
	NotDone   []Planned
	Rerun     string // the command that completes the installation
	Err       error
}

func (e *IncompleteError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	b.WriteString("\n\ninit did not complete.")
	if len(e.Installed) > 0 {
		b.WriteString(" Installed and recorded in the inventory: ")
		b.WriteString(listPlanned(e.Installed))
		b.WriteString(".")
	}
	if len(e.Partial) > 0 {
		b.WriteString(" Partly applied (not recorded): ")
		b.WriteString(listPlanned(e.Partial))
		b.WriteString(".")
	}
	if len(e.NotDone) > 0 {
		b.WriteString(" Not started: ")
		b.WriteString(listPlanned(e.NotDone))
		b.WriteString(".")
	}
	fmt.Fprintf(&b, "\nRun this to complete it (installed parts are skipped, partial ones re-applied):\n  %s", e.Rerun)
	return b.String()
}

func (e *IncompleteError) Unwrap() error { return e.Err }

func listPlanned(ps []Planned) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Label() + " " + p.Version
	}
	return strings.Join(s, ", ")
}

// RerunCommand is the init command line that installs exactly ps at their resolved versions. When
// the core provider is among them (so the re-run is again a first run), bootstrap and control plane
// without an entry get "-", so that the re-run does not add the kubeadm defaults.
func RerunCommand(ps []Planned, targetNamespace string) string {
	parts := []string{"capctl init"}
	byType := map[provider.Type][]string{}
	for _, p := range ps {
		byType[p.Type] = append(byType[p.Type], p.Name+":"+p.Version)
	}
	has := func(t provider.Type) bool { return len(byType[t]) > 0 }
	for _, t := range provider.Types {
		if has(t) {
			parts = append(parts, t.Flag()+" "+strings.Join(byType[t], ","))
		} else if has(provider.CoreProviderType) && (t == provider.BootstrapProviderType || t == provider.ControlPlaneProviderType) {
			// Without the core installed, a re-run would add the kubeadm defaults again.
			parts = append(parts, t.Flag()+" -")
		}
	}
	if targetNamespace != "" {
		parts = append(parts, "--target-namespace "+targetNamespace)
	}
	return strings.Join(parts, " ")
}

// ValidationError is a refused plan (contract, duplicates); errors.Is(err, ErrValidation).
var ErrValidation = errors.New("validation failed")

// initialize runs `capctl init` (see the package documentation): the stages of initRun in order.
// Nothing is written before every input is resolved, fetched, parsed and checked (readCluster
// to preflight), so a refused init changes nothing.
func initialize(ctx context.Context, cl Clients, opts InitRequest) (*Result, error) {
	start := time.Now()
	log := opts.Log
	if log == nil {
		log = logging.Discard()
	}
	if opts.WaitProviderTimeout == 0 {
		opts.WaitProviderTimeout = DefaultWaitProviderTimeout
	}
	reqs, err := ParseRequests(opts.Selection)
	if err != nil {
		return nil, err
	}
	r := &initRun{cl: cl, c: cl.Cluster, opts: opts, log: log}
	if err := r.readCluster(ctx, reqs); err != nil {
		return nil, err
	}
	if err := r.planProviders(ctx); err != nil {
		return nil, err
	}
	if len(r.todo) == 0 {
		r.res.NoOp = true
		r.res.Duration = time.Since(start)
		return r.res, nil
	}
	if err := r.preflight(ctx); err != nil {
		return nil, err
	}

	// The first writes: the init lock (another init running at once would race this one's
	// cert-manager probe and installs), the inventory CRD (in the background: only the inventory
	// entries need it) and clusterctl's cert-manager probe, which decides whether cert-manager is
	// installed.
	if !opts.DryRun {
		lk, lctx, err := lockInit(ctx, r.c)
		if err != nil {
			return nil, err
		}
		defer lk.Release(ctx)
		ctx = lctx
		if opts.OnLocked != nil {
			opts.OnLocked()
		}
	}
	r.crd = ensureInventoryCRD(ctx, r.c, opts.DryRun)
	defer r.crd.wait()
	if err := r.decideCertManager(ctx); err != nil {
		return nil, err
	}
	if err := r.install(ctx); err != nil {
		return nil, err
	}
	if err := r.waitProviders(ctx); err != nil {
		return r.res, err
	}
	r.res.Duration = time.Since(start)
	return r.res, nil
}

// initRun is one Init in progress: what each stage found, for the stages after it.
type initRun struct {
	cl   Clients
	c    *cluster.Client
	opts InitRequest
	log  *logging.Logger
	res  *Result

	installed []inventory.Provider
	items     []Request
	plan      []Planned
	todo      []int // plan indexes of the providers to install

	cmCfg   config.CertManager
	cmFetch func(context.Context) (*certmanager.Components, error)
	cmObjs  []unstructured.Unstructured
	cmCRDs  []unstructured.Unstructured
	crd     *inventoryCRD
	cm      *certmanager.Install
}

// readCluster reads the management cluster: its inventory (none yet is fine) and contract; on a
// first run (no core provider) the requests get clusterctl's defaults.
func (r *initRun) readCluster(ctx context.Context, reqs *Requests) error {
	installed, err := inventory.List(ctx, r.c)
	if err != nil && !errors.Is(err, inventory.ErrNoInventory) {
		return err
	}
	if err := contract.CheckManagementCluster(ctx, r.c, contract.AllowNotInstalled()); err != nil {
		return err
	}
	r.installed = installed
	_, hasCore := inventory.Core(installed)
	r.res = &Result{FirstRun: !hasCore, DryRun: r.opts.DryRun}
	r.items = reqs.Items
	if r.res.FirstRun {
		r.items = reqs.withDefaults()
	}
	if len(r.items) == 0 {
		return fmt.Errorf("the management cluster already has a core provider; name the providers to add (--bootstrap, --control-plane, --infrastructure, --ipam, --runtime-extension, --addon)")
	}
	return nil
}

// planProviders resolves the versions (skipping what is installed, refusing other versions),
// validates the simulated inventory and lists the providers to install.
func (r *initRun) planProviders(ctx context.Context) error {
	r.log.Info("Fetching providers")
	plan, err := resolve(ctx, r.cl, r.items, r.installed, r.opts)
	if err != nil {
		return err
	}
	if err := validate(plan, r.installed, r.cl, ctx); err != nil {
		if r.opts.StrictChecks {
			return err
		}
		r.log.Info("Ignoring validation errors (--validate=false)", "error", err.Error())
	}
	r.plan = plan
	r.res.Providers = plan
	if r.opts.OnPlan != nil {
		r.opts.OnPlan(plan)
	}
	for i, p := range plan {
		if p.Action == ActionInstall {
			r.todo = append(r.todo, i)
		}
	}
	return nil
}

// preflight checks, before the first write, cert-manager's components when it will have to be
// installed, the kind of every object of every provider, and the permissions to apply them all.
func (r *initRun) preflight(ctx context.Context) error {
	var err error
	if r.cmCfg, err = certManagerConfig(r.cl.Config); err != nil {
		return err
	}
	if r.cmFetch, r.cmObjs, r.cmCRDs, err = prefetchCertManager(ctx, r.cl, r.cmCfg); err != nil {
		return err
	}
	if err := checkKinds(ctx, r.c, r.plan, r.todo, r.cmCRDs); err != nil {
		return err
	}
	return checkPermissions(ctx, r.c, r.plan, r.todo, r.cmObjs, r.cmCRDs)
}

// decideCertManager runs clusterctl's cert-manager probe, which decides whether cert-manager is
// installed.
func (r *initRun) decideCertManager(ctx context.Context) error {
	cm, err := certmanager.Decide(ctx, r.c, certmanager.Options{
		Config:       r.cmCfg,
		Fetch:        r.cmFetch,
		DryRun:       r.opts.DryRun,
		WaitInterval: r.opts.WaitInterval,
		Log:          r.log,
	})
	if err != nil {
		return &IncompleteError{NotDone: pick(r.plan, r.todo), Rerun: RerunCommand(pick(r.plan, r.todo), r.opts.TargetNamespace), Err: err}
	}
	r.cm = cm
	r.res.CertManager = cm.Result
	return nil
}

// install applies cert-manager's objects and every provider's, as one install
// (install.ApplySets): all Namespaces, all CRDs and one wait for them, all other objects; then,
// once cert-manager works, per provider in order its Issuers and Certificates, its webhook
// configurations and its inventory entry, so a provider is recorded only when all its objects
// are applied.
func (r *initRun) install(ctx context.Context) error {
	opts, plan, cm := r.opts, r.plan, r.cm
	var sets []install.Set
	var setPlan []int // plan index of each set; -1 for cert-manager
	if len(cm.Objects) > 0 {
		sets = append(sets, install.Set{Source: cm.Source, Objects: cm.Objects})
		setPlan = append(setPlan, -1)
	}
	for _, i := range r.todo {
		p := plan[i]
		r.log.Info("Installing", "provider", p.Label(), "version", p.Version, "targetNamespace", p.Namespace)
		sets = append(sets, install.Set{Source: p.Label() + " " + p.Version + " (" + p.Source + ")", Objects: p.components.Objects, AfterReady: true})
		setPlan = append(setPlan, i)
	}
	results, err := install.ApplySets(ctx, r.c, sets, install.SetsOptions{
		// Without the wait for the providers, the CRDs no object of the install uses are left to
		// the API server to establish, as clusterctl does with all of them; with it, a provider
		// is recorded only once all its CRDs are Established.
		ApplyOptions: install.ApplyOptions{DryRun: opts.DryRun, Log: r.log, WaitUsedCRDsOnly: !opts.WaitProviders},
		NeedsReady:   func(u *unstructured.Unstructured) bool { return certmanager.IsAPIGroup(u.GroupVersionKind().Group) },
		Ready:        cm.Wait,
		OnSetApplied: func(set int, ref install.ObjectRef, d, total int) {
			if opts.OnApplied != nil && setPlan[set] >= 0 {
				opts.OnApplied(plan[setPlan[set]], ref, d, total)
			}
		},
		SetDone: func(ctx context.Context, set int) error {
			if setPlan[set] < 0 || opts.DryRun {
				return nil
			}
			if err := r.crd.wait(); err != nil {
				return err
			}
			p := plan[setPlan[set]]
			entry := inventory.New(p.Name, p.Type, p.Version, p.Namespace)
			entry.Artifact = p.components.Artifact
			return inventory.Write(ctx, r.c, entry)
		},
	})
	if err != nil {
		return incomplete(err, plan, r.todo, setPlan, cm.Result, opts.TargetNamespace)
	}
	for k, i := range setPlan {
		if i < 0 {
			cm.Applied(results[k])
			continue
		}
		p := &plan[i]
		p.Objects = len(results[k].Applied)
		p.Unchecked = len(results[k].Unchecked)
		if opts.DryRun {
			p.Action = ActionWouldInstall
		} else {
			p.Action = ActionInstalled
		}
	}
	return nil
}

// waitProviders waits for the installed providers (with --wait-providers, not in a dry run).
func (r *initRun) waitProviders(ctx context.Context) error {
	if !r.opts.WaitProviders || r.opts.DryRun {
		return nil
	}
	var objs []unstructured.Unstructured
	for _, i := range r.todo {
		objs = append(objs, r.plan[i].components.Objects...)
	}
	r.log.Info("Waiting for providers to be available...", "waitingFor", install.Summary(objs, false), "timeout", r.opts.WaitProviderTimeout.String())
	if err := install.Wait(ctx, r.c, objs, install.WaitOptions{Timeout: r.opts.WaitProviderTimeout, Interval: r.opts.WaitInterval, Source: "providers", Log: r.log}); err != nil {
		return fmt.Errorf("all providers are installed and recorded, but %w\nre-run with --wait-providers=false to skip this wait, or check the reasons above", err)
	}
	r.res.Waited = true
	return nil
}

// inventoryCRD is the inventory CRD being ensured in the background.
type inventoryCRD struct {
	done chan struct{}
	err  error
}

// ensureInventoryCRD starts inventory.EnsureCRD (not in a dry run, which writes no inventory).
func ensureInventoryCRD(ctx context.Context, c *cluster.Client, dryRun bool) *inventoryCRD {
	r := &inventoryCRD{done: make(chan struct{})}
	if dryRun {
		close(r.done)
		return r
	}
	go func() {
		defer close(r.done)
		r.err = inventory.EnsureCRD(ctx, c)
	}()
	return r
}

// wait waits until the inventory CRD is there (or could not be made) and says which.
func (r *inventoryCRD) wait() error {
	<-r.done
	return r.err
}

// incomplete turns a failed install.ApplySets into an IncompleteError: providers whose set was
// done are installed and recorded, those with objects applied are partial, the others not started.
func incomplete(err error, plan []Planned, todo, setPlan []int, cm *certmanager.Result, targetNamespace string) error {
	var se *install.SetsError
	if !errors.As(err, &se) {
		return &IncompleteError{NotDone: pick(plan, todo), Rerun: RerunCommand(pick(plan, todo), targetNamespace), Err: err}
	}
	ie := &IncompleteError{Err: err}
	var rerun []Planned
	for k, i := range setPlan {
		if i < 0 {
			continue
		}
		p := plan[i]
		switch {
		case se.Sets[k].Done:
			p.Action = ActionInstalled
			ie.Installed = append(ie.Installed, p)
			continue
		case len(se.Sets[k].Applied) > 0:
			ie.Partial = append(ie.Partial, p)
		default:
			ie.NotDone = append(ie.NotDone, p)
		}
		rerun = append(rerun, p)
	}
	if se.Failed >= 0 {
		if i := setPlan[se.Failed]; i >= 0 {
			ie.Err = fmt.Errorf("installing %s %s: %w", plan[i].Label(), plan[i].Version, err)
		} else {
			ie.Err = fmt.Errorf("installing cert-manager %s: %w", cm.Version, err)
		}
	}
	ie.Rerun = RerunCommand(rerun, targetNamespace)
	return ie
}

// prefetchCertManager fetches and parses cert-manager's components up front when no cert-manager
// is there at all (it will be installed), so that a cert-manager that cannot be fetched refuses
// the init before anything is written. With a cert-manager present, clusterctl's probe decides
// later and the components are fetched only if needed. It returns the Fetch to give
// certmanager.Ensure, the prefetched objects (none when cert-manager is there) and the CRDs the
// providers' kinds may rely on: also those of a cert-manager capctl or clusterctl installed, so
// that one an interrupted init left with only part of its CRDs (which the probe then installs
// again) does not refuse the providers' Issuers.
func prefetchCertManager(ctx context.Context, cl Clients, cfg config.CertManager) (func(context.Context) (*certmanager.Components, error), []unstructured.Unstructured, []unstructured.Unstructured, error) {
	fetch := func(ctx context.Context) (*certmanager.Components, error) { return certmanager.Fetch(ctx, cl.Repo, "") }
	own, err := certmanager.Owner(ctx, cl.Cluster)
	if err != nil {
		return nil, nil, nil, err
	}
	if own.Foreign || cfg.ExternallyProvisioned {
		return fetch, nil, nil, nil
	}
	if own.Managed {
		comps, err := fetch(ctx)
		if err != nil {
			// The probe may find it complete: fetched again only if it must be installed.
			return fetch, nil, nil, nil
		}
		return func(context.Context) (*certmanager.Components, error) { return comps, nil }, nil, crdsOf(comps.Objects), nil
	}
	comps, err := fetch(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("fetching cert-manager %s (nothing was changed): %w", cfg.Version, err)
	}
	if err := install.CheckKinds(ctx, cl.Cluster, "cert-manager "+comps.Version+" ("+comps.URL+")", comps.Objects); err != nil {
		return nil, nil, nil, err
	}
	return func(context.Context) (*certmanager.Components, error) { return comps, nil }, comps.Objects, crdsOf(comps.Objects), nil
}

// checkPermissions is init's permission preflight (the table's "init" rules), with every kind of
// the components it will apply, cert-manager's included when it will install it: a user who may
// not create one of them is refused with the whole list before the init lock, the first write.
func checkPermissions(ctx context.Context, c *cluster.Client, plan []Planned, todo []int, cmObjs, cmCRDs []unstructured.Unstructured) error {
	objs := append([]unstructured.Unstructured(nil), cmObjs...)
	for _, i := range todo {
		objs = append(objs, plan[i].components.Objects...)
	}
	// cert-manager's CRDs name the providers' Issuers and Certificates also when its installation
	// is only partly there; they are not themselves objects to check unless init installs them.
	kinds, err := authz.Resources(c.Mapper, objs, cmCRDs...)
	if err != nil {
		return err
	}
	return authz.Preflight(ctx, "init", authz.Expansion{Kinds: map[string][]string{authz.EveryComponentKind: kinds}},
		authz.Cluster{Side: authz.Management, Client: c, Host: c.Config.Host})
}

// checkKinds checks the objects of every provider to install, in install order: each kind must
// be served, or defined by a CRD of cert-manager or of the same or an earlier provider.
func checkKinds(ctx context.Context, c *cluster.Client, plan []Planned, todo []int, pending []unstructured.Unstructured) error {
	var errs []error
	for _, i := range todo {
		p := plan[i]
		if err := install.CheckKinds(ctx, c, p.Label()+" "+p.Version+" ("+p.Source+")", p.components.Objects, pending...); err != nil {
			errs = append(errs, err)
		}
		pending = append(pending, crdsOf(p.components.Objects)...)
	}
	return refused(errs)
}

// refused is nil, the one error, or every error of a refused init at once.
func refused(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	format := fmt.Sprintf("init refused with %d problems (nothing was changed):", len(errs))
	args := make([]any, len(errs))
	for i, e := range errs {
		format += "\n  - %w"
		args[i] = e
	}
	return fmt.Errorf(format, args...)
}

func crdsOf(objs []unstructured.Unstructured) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			out = append(out, u)
		}
	}
	return out
}

func pick(plan []Planned, idx []int) []Planned {
	out := make([]Planned, 0, len(idx))
	for _, i := range idx {
		out = append(out, plan[i])
	}
	return out
}

func certManagerConfig(cfg *config.Config) (config.CertManager, error) {
	if cfg == nil {
		return config.CertManager{Version: config.DefaultCertManagerVersion, Timeout: config.DefaultCertManagerTimeout}, nil
	}
	return cfg.CertManager()
}

// resolve turns requests into a plan: versions, contracts, namespaces, components. Every request
// is tried, so that all unknown providers, missing versions and unreadable components are
// reported together.
//
// The providers are fetched and processed concurrently (reading, parsing and substituting a
// components file is CPU work of its own); plan and errors keep the order of items.
func resolve(ctx context.Context, cl Clients, items []Request, installed []inventory.Provider, opts InitRequest) ([]Planned, error) {
	plans := make([]Planned, len(items))
	errs := make([]error, len(items))
	var g errgroup.Group
	g.SetLimit(4)
	for i, r := range items {
		g.Go(func() error {
			plans[i], errs[i] = resolveOne(ctx, cl, r, installed, opts)
			return nil
		})
	}
	_ = g.Wait() // the goroutines report through errs
	plan := make([]Planned, 0, len(items))
	var failed []error
	for i := range items {
		if errs[i] != nil {
			failed = append(failed, errs[i])
			continue
		}
		plan = append(plan, plans[i])
	}
	if err := refused(failed); err != nil {
		return nil, err
	}
	return plan, nil
}

func resolveOne(ctx context.Context, cl Clients, r Request, installed []inventory.Provider, opts InitRequest) (Planned, error) {
	p, err := cl.Repo.Provider(r.Name, r.Type)
	if err != nil {
		return Planned{}, err
	}
	rel, err := cl.Repo.Resolve(ctx, p, r.Version, repository.ResolveOptions{})
	if err != nil {
		return Planned{}, fmt.Errorf("resolving %s: %w", r, err)
	}
	pl := Planned{Name: r.Name, Type: r.Type, Version: rel.Version, Contract: rel.Contract, Default: r.Default, Action: ActionInstall}
	// Already installed?
	if same := inventory.Find(installed, r.Name, r.Type); len(same) > 0 {
		cur := same[0]
		if cur.Version != rel.Version {
			return Planned{}, fmt.Errorf("%s is already installed in namespace %s at version %s; init does not change versions: use `capctl upgrade plan` and `capctl upgrade apply` to move it to %s: %w",
				cur.ManifestLabel(), cur.Namespace, cur.Version, rel.Version, ErrValidation)
		}
		if opts.TargetNamespace == "" || opts.TargetNamespace == cur.Namespace {
			pl.Namespace, pl.Action = cur.Namespace, ActionAlreadyThere
			return pl, nil
		}
		return Planned{}, fmt.Errorf("there is already an instance of the %q provider installed in the %q namespace; one instance per provider is supported: %w", cur.ManifestLabel(), cur.Namespace, ErrValidation)
	}
	comps, err := cl.Repo.Components(ctx, p, repository.ComponentsOptions{Version: rel.Version, TargetNamespace: opts.TargetNamespace})
	if err != nil {
		return Planned{}, fmt.Errorf("%s %s: %w", pl.Label(), rel.Version, err)
	}
	pl.Namespace = comps.TargetNamespace
	pl.Images = comps.Images
	pl.Source = comps.URL
	pl.components = comps
	return pl, nil
}

// validate checks the plan together with the installed providers (clusterctl-spec §7 step 4).
func validate(plan []Planned, installed []inventory.Provider, cl Clients, ctx context.Context) error {
	var problems []string
	// One instance per provider (the plan names each once; installed ones were matched above).
	var core *Planned
	for i := range plan {
		if plan[i].Type == provider.CoreProviderType {
			core = &plan[i]
		}
	}
	coreContract := ""
	coreDesc := ""
	if core != nil {
		coreContract, coreDesc = core.Contract, "cluster-api "+core.Version
	} else if ic, ok := inventory.Core(installed); ok {
		p, err := cl.Repo.Provider(ic.ProviderName, ic.Type)
		if err == nil {
			var rel *repository.Release
			if rel, err = cl.Repo.Resolve(ctx, p, ic.Version, repository.ResolveOptions{}); err == nil {
				coreContract, coreDesc = rel.Contract, "the installed cluster-api "+ic.Version
			}
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("cannot read the contract of the installed core provider %s: %v", ic.Version, err))
		}
	} else {
		problems = append(problems, "invalid management cluster: there must be one core provider, found 0")
	}
	if coreContract != "" && coreContract != contract.Current {
		problems = append(problems, fmt.Sprintf("%s implements the %s contract; capctl installs %s core providers only (pin a newer --core version)", coreDesc, coreContract, contract.Current))
	}
	for _, p := range plan {
		if p.Action != ActionInstall {
			continue
		}
		if !contract.Usable(p.Contract) {
			problems = append(problems, fmt.Sprintf("%s %s implements the %s contract, which capctl cannot use (compatible: %s)", p.Label(), p.Version, p.Contract, strings.Join(contract.Compatible(contract.Current), ", ")))
			continue
		}
		if coreContract != "" && p.Type != provider.CoreProviderType && !contract.IsCompatible(coreContract, p.Contract) {
			problems = append(problems, fmt.Sprintf("%s %s implements the %s contract, while %s is compatible with %s providers only: pick versions with the same contract",
				p.Label(), p.Version, p.Contract, coreDesc, strings.Join(contract.Compatible(coreContract), ", ")))
		}
		if p.components != nil {
			problems = append(problems, crdNameProblems(p)...)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return fmt.Errorf("%w:\n  - %s", ErrValidation, strings.Join(problems, "\n  - "))
}

// SkipCRDNameCheckAnnotation lets a CRD skip the <plural>.<group> naming check.
const SkipCRDNameCheckAnnotation = "clusterctl.cluster.x-k8s.io/skip-crd-name-preflight-check"

func crdNameProblems(p Planned) []string {
	var out []string
	for _, u := range p.components.Objects {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if _, skip := u.GetAnnotations()[SkipCRDNameCheckAnnotation]; skip {
			continue
		}
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
		if want := plural + "." + group; u.GetName() != want {
			out = append(out, fmt.Sprintf("%s %s: CRD %s should be named %s (or annotated %s)", p.Label(), p.Version, u.GetName(), want, SkipCRDNameCheckAnnotation))
		}
	}
	return out
}
