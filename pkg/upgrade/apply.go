package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
)

// Source is what applying needs from the repositories: the catalog (versions, metadata) and the
// processed components of a provider version, moved into the given namespace.
type Source interface {
	Catalog
	Components(ctx context.Context, p inventory.Provider, version, targetNamespace string) ([]unstructured.Unstructured, error)
	// Artifact names the OCI artifact of a version by digest, "" when there is none.
	Artifact(ctx context.Context, p inventory.Provider, version string) (string, error)
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// DryRun validates, reads the current components and sends the new ones as a server-side dry
	// run: nothing changes.
	DryRun bool
	// WaitProviders waits for the new components to be usable (as init --wait-providers).
	WaitProviders bool
	// WaitTimeout bounds that wait (default 5 min).
	WaitTimeout time.Duration
	// ScaleDownTimeout bounds the wait for the old controllers to stop (default 1 min).
	ScaleDownTimeout time.Duration
	// CertManagerTimeout bounds the wait for an upgraded cert-manager (default 10 min).
	CertManagerTimeout time.Duration
	// Log receives progress per provider. Nil discards.
	Log *logging.Logger
	// Plan, when set, is the saved plan (read from PlanPath) the request came from: before any
	// write, every target must still start from the planned version and its new version's
	// artifact must be the one reviewed.
	Plan     *PlanFile
	PlanPath string
}

// ApplyResult says what Apply did (or, with DryRun, would do).
type ApplyResult struct {
	DryRun    bool             `json:"dryRun"`
	Providers []ProviderResult `json:"providers"`
	// CertManager is set when cert-manager is (or, with DryRun, would be) upgraded.
	CertManager *CertManagerPlan `json:"certManager,omitempty"`
	// Warnings list container args and env the user changed on the running Deployments that the
	// new components do not carry: the upgrade drops them.
	Warnings []DriftWarning `json:"warnings,omitempty"`
}

// ProviderResult is one provider's upgrade.
type ProviderResult struct {
	Target
	// Deleted are the old components deleted (CRDs, the namespace and the inventory entry are kept).
	Deleted []install.ObjectRef `json:"deleted"`
	// Dropped are old objects the new version does not have any more (a subset of Deleted).
	Dropped []install.ObjectRef `json:"dropped,omitempty"`
	// Applied are the new components applied (CRDs updated in place).
	Applied []install.ObjectRef `json:"applied"`
	// Unchecked are objects a dry run could not check (their CRD or namespace is new).
	Unchecked []install.ObjectRef `json:"unchecked,omitempty"`
}

// DriftWarning is one user change on a running controller that the upgrade drops.
type DriftWarning struct {
	Provider   string `json:"provider"`
	Deployment string `json:"deployment"` // namespace/name
	Container  string `json:"container"`
	// What is "arg" or "env".
	What  string `json:"what"`
	Value string `json:"value"`
}

func (w DriftWarning) String() string {
	return fmt.Sprintf("%s: Deployment %s container %s: %s %s", w.Provider, w.Deployment, w.Container, w.What, w.Value)
}

// ErrNothingToUpgrade means every requested provider is already at its target version.
var ErrNothingToUpgrade = errors.New("nothing to upgrade: the providers are already at the requested versions")

type preparedUpgrade struct {
	target   Target
	newObjs  []unstructured.Unstructured
	oldObjs  []unstructured.Unstructured // the current version's components as the repository has them (nil if unavailable)
	live     []unstructured.Unstructured // the objects of the provider in the cluster, minus what is kept
	liveDeps []appsv1.Deployment
	artifact string // the OCI artifact of the new version, by digest ("" for none)
}

// ApplyRequest is `capctl upgrade apply` of the providers: what to upgrade to (Request) and how
// (ApplyOptions).
type ApplyRequest struct {
	Request
	ApplyOptions
}

// Apply is `capctl upgrade apply` of the providers on the Env's management cluster, with the
// Env's provider repositories as the source of the new releases (apply).
func Apply(ctx context.Context, e env.Env, req ApplyRequest) (*ApplyResult, error) {
	c, err := e.Single()
	if err != nil {
		return nil, err
	}
	rc, err := e.Repositories(ctx)
	if err != nil {
		return nil, err
	}
	return apply(ctx, c, RepositoryCatalog{Client: rc}, req.Request, req.ApplyOptions)
}

// apply upgrades providers as `capctl upgrade apply` does: validate every input and fetch every
// new component set first; then scale the old controllers to zero, and per provider (in type
// order) delete the old components except CRDs, the namespace and the inventory entry, apply the
// new ones (CRDs updated in place) and record the new version in the inventory.
func apply(ctx context.Context, c *cluster.Client, src Source, req Request, opts ApplyOptions) (*ApplyResult, error) {
	log := opts.Log
	if log == nil {
		log = logging.Discard()
	}
	if opts.ScaleDownTimeout == 0 {
		opts.ScaleDownTimeout = time.Minute
	}
	if opts.CertManagerTimeout == 0 {
		opts.CertManagerTimeout = 10 * time.Minute
	}
	items, err := ReadInventory(ctx, c)
	if err != nil {
		return nil, err
	}
	targets, err := ValidateRequest(ctx, src, items, req)
	if err != nil {
		return nil, err
	}
	var cmPlan *CertManagerPlan
	var cmComps *certmanager.Components
	if cs, ok := src.(CertManagerSource); ok {
		if cmPlan, cmComps, err = planCertManager(ctx, c, cs); err != nil {
			return nil, err
		}
		if cmPlan != nil && !cmPlan.ShouldUpgrade {
			cmPlan = nil
		}
	}
	if len(targets) == 0 && cmPlan == nil {
		return nil, ErrNothingToUpgrade
	}

	// Everything that can fail without touching the cluster, first.
	prepared, err := prepare(ctx, c, src, targets, log)
	if err != nil {
		return nil, err
	}
	if opts.Plan != nil {
		if err := checkPlan(opts.Plan, opts.PlanPath, prepared); err != nil {
			return nil, err
		}
	}

	if err := checkPermissions(ctx, c, prepared, cmPlan, cmComps); err != nil {
		return nil, err
	}

	res := &ApplyResult{DryRun: opts.DryRun, CertManager: cmPlan}
	for _, pu := range prepared {
		res.Warnings = append(res.Warnings, driftWarnings(pu.target.Provider.ManifestLabel(), pu.liveDeps, pu.oldObjs, pu.newObjs)...)
	}

	if opts.DryRun {
		return dryRun(ctx, c, res, prepared, log)
	}

	if cmPlan != nil {
		if err := certmanager.Upgrade(ctx, c, cmPlan, cmComps, opts.CertManagerTimeout, log); err != nil {
			return res, err
		}
	}
	if len(prepared) == 0 {
		return res, nil
	}
	log.Info("Performing upgrade...")
	// Old controllers stop first, so that none of them answers conversion webhooks for new CRDs.
	for _, pu := range prepared {
		if err := scaleDown(ctx, c, pu.target.Provider, pu.liveDeps, opts.ScaleDownTimeout); err != nil {
			return res, err
		}
	}
	for _, pu := range prepared {
		pr, err := upgradeProvider(ctx, c, pu, log)
		res.Providers = append(res.Providers, pr)
		if err != nil {
			return res, err
		}
	}
	if opts.WaitProviders {
		for _, pu := range prepared {
			log.Info("Waiting for the provider to be available", "provider", pu.target.Provider.String(), "waitingFor", install.Summary(pu.newObjs, false))
			if err := install.Wait(ctx, c, pu.newObjs, install.WaitOptions{Timeout: opts.WaitTimeout, Source: source(pu.target), Log: log}); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// prepare fetches the new (and, when it can, the installed) components of every target and reads
// the provider's objects in the cluster: everything that can fail before the cluster is touched.
func prepare(ctx context.Context, c *cluster.Client, src Source, targets []Target, log *logging.Logger) ([]*preparedUpgrade, error) {
	prepared := make([]*preparedUpgrade, 0, len(targets))
	var err error
	for _, t := range targets {
		pu := &preparedUpgrade{target: t}
		pu.newObjs, err = src.Components(ctx, t.Provider, t.To, t.Provider.Namespace)
		if err != nil {
			return nil, fmt.Errorf("fetching the components of %s %s: %w", t.Provider.ManifestLabel(), t.To, err)
		}
		if pu.artifact, err = src.Artifact(ctx, t.Provider, t.To); err != nil {
			return nil, fmt.Errorf("reading the artifact of %s %s: %w", t.Provider.ManifestLabel(), t.To, err)
		}
		if old, err := src.Components(ctx, t.Provider, t.From, t.Provider.Namespace); err == nil {
			pu.oldObjs = old
		} else {
			log.V(1).Info("Cannot read the installed version's components; comparing the running controllers with the new version only", "provider", t.Provider.ManifestLabel(), "version", t.From, "reason", err.Error())
		}
		pu.live, err = providerObjects(ctx, c, t.Provider, pu.oldObjs, pu.newObjs)
		if err != nil {
			return nil, err
		}
		for _, u := range pu.live {
			if u.GetKind() == "Deployment" && u.GroupVersionKind().Group == "apps" {
				d := appsv1.Deployment{}
				if err := runtimeConvert(&u, &d); err == nil {
					pu.liveDeps = append(pu.liveDeps, d)
				}
			}
		}
		prepared = append(prepared, pu)
	}
	return prepared, nil
}

// dryRun sends every new component set as a server-side dry run and says what would change.
func dryRun(ctx context.Context, c *cluster.Client, res *ApplyResult, prepared []*preparedUpgrade, log *logging.Logger) (*ApplyResult, error) {
	if cm := res.CertManager; cm != nil {
		log.Info("Would upgrade cert-manager", "from", cm.From, "to", cm.To)
	}
	for _, pu := range prepared {
		pr := ProviderResult{Target: pu.target, Deleted: refs(pu.live), Dropped: dropped(pu.live, pu.newObjs)}
		log.Info("Would upgrade", "provider", pu.target.Provider.String(), "from", pu.target.From, "to", pu.target.To)
		r, err := install.Apply(ctx, c, pu.newObjs, install.ApplyOptions{DryRun: true, Source: source(pu.target), Log: log.V(1)})
		if err != nil {
			return nil, fmt.Errorf("dry run of %s %s: %w", pu.target.Provider.ManifestLabel(), pu.target.To, err)
		}
		pr.Applied, pr.Unchecked = r.Applied, r.Unchecked
		res.Providers = append(res.Providers, pr)
	}
	return res, nil
}

// upgradeProvider deletes one provider's old components (CRDs, the namespace and the inventory
// entry are kept), applies the new ones and records the new version in the inventory; the result
// says what it did also when it fails.
func upgradeProvider(ctx context.Context, c *cluster.Client, pu *preparedUpgrade, log *logging.Logger) (ProviderResult, error) {
	t := pu.target
	log.Info("Upgrading", "provider", t.Provider.String(), "from", t.From, "to", t.To)
	pr := ProviderResult{Target: t, Dropped: dropped(pu.live, pu.newObjs)}
	for i := range pu.live {
		u := &pu.live[i]
		err := c.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			return pr, fmt.Errorf("upgrading %s: deleting %s: %w (the old components are partly deleted: run the same upgrade again)", t.Provider.ManifestLabel(), install.RefOf(u), err)
		}
		pr.Deleted = append(pr.Deleted, install.RefOf(u))
		log.V(1).Info("Deleted", "object", install.RefOf(u).String())
	}
	r, err := install.Apply(ctx, c, pu.newObjs, install.ApplyOptions{Source: source(t), Log: log.V(1)})
	if err != nil {
		return pr, fmt.Errorf("upgrading %s to %s: %w (the old components are deleted: run the same upgrade again to finish)", t.Provider.ManifestLabel(), t.To, err)
	}
	pr.Applied = r.Applied
	updated := t.Provider
	updated.Version, updated.Artifact = t.To, pu.artifact
	if err := inventory.Write(ctx, c, updated); err != nil {
		return pr, err
	}
	log.Info("Upgraded", "provider", t.Provider.String(), "version", t.To, "deleted", len(pr.Deleted), "applied", len(pr.Applied))
	return pr, nil
}

// checkPermissions is the provider upgrade's permission preflight (the table's "upgrade apply"
// rules), with the kinds of every object it deletes and applies, cert-manager's when it upgrades
// it: an upgrade that found a missing permission after deleting the old components left a
// provider without controllers. It runs in a dry run too, so that a dry run that passes means
// the upgrade may be done.
func checkPermissions(ctx context.Context, c *cluster.Client, prepared []*preparedUpgrade, cmPlan *CertManagerPlan, cmComps *certmanager.Components) error {
	var objs []unstructured.Unstructured
	if cmPlan != nil && cmComps != nil {
		objs = append(objs, cmComps.Objects...)
	}
	for _, pu := range prepared {
		objs = append(objs, pu.live...)
		objs = append(objs, pu.newObjs...)
	}
	kinds, err := authz.Resources(c.Mapper, objs)
	if err != nil {
		return err
	}
	return authz.Preflight(ctx, "upgrade apply", authz.Expansion{Kinds: map[string][]string{authz.EveryComponentKind: kinds}},
		authz.Cluster{Side: authz.Management, Client: c, Host: c.Config.Host})
}

func source(t Target) string {
	return fmt.Sprintf("%s %s", t.Provider.ManifestLabel(), t.To)
}

func refs(objs []unstructured.Unstructured) []install.ObjectRef {
	out := make([]install.ObjectRef, 0, len(objs))
	for i := range objs {
		out = append(out, install.RefOf(&objs[i]))
	}
	return out
}

// dropped returns the live objects the new components do not have.
func dropped(live, newObjs []unstructured.Unstructured) []install.ObjectRef {
	have := map[string]bool{}
	for i := range newObjs {
		u := &newObjs[i]
		have[u.GroupVersionKind().GroupKind().String()+"|"+u.GetNamespace()+"|"+u.GetName()] = true
	}
	var out []install.ObjectRef
	for i := range live {
		u := &live[i]
		if !have[u.GroupVersionKind().GroupKind().String()+"|"+u.GetNamespace()+"|"+u.GetName()] {
			out = append(out, install.RefOf(u))
		}
	}
	return out
}

// kept are the kinds an upgrade never deletes.
func kept(gk schema.GroupKind) bool {
	switch {
	case gk.Group == "apiextensions.k8s.io" && gk.Kind == "CustomResourceDefinition":
		return true
	case gk.Group == "" && gk.Kind == "Namespace":
		return true
	case gk.Group == inventory.Group && gk.Kind == inventory.Kind:
		return true
	}
	return false
}

// providerObjects lists the provider's objects in the cluster (label cluster.x-k8s.io/provider,
// in its namespace or cluster-scoped) of every kind the old or new components have, plus the
// usual kinds, leaving out what an upgrade keeps.
func providerObjects(ctx context.Context, c *cluster.Client, p inventory.Provider, sets ...[]unstructured.Unstructured) ([]unstructured.Unstructured, error) {
	return install.ListInstalled(ctx, c, install.ListInstalledOptions{
		What:      p.ManifestLabel(),
		Selector:  []client.ListOption{client.MatchingLabels{inventory.ProviderLabel: p.ManifestLabel()}, client.HasLabels{inventory.ClusterctlLabel}},
		Namespace: p.Namespace,
		Skip:      kept,
		Command:   "capctl upgrade apply",
	}, sets...)
}

// scaleDown scales the provider's Deployments to 0 and waits until they report no replicas.
func scaleDown(ctx context.Context, c *cluster.Client, p inventory.Provider, deps []appsv1.Deployment, timeout time.Duration) error {
	for i := range deps {
		d := &deps[i]
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":0}}`))
		if err := c.Patch(ctx, d, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("scaling Deployment %s/%s of %s to 0: %w (nothing was upgraded yet)", d.Namespace, d.Name, p.ManifestLabel(), err)
		}
	}
	for i := range deps {
		d := deps[i]
		err := cluster.Poll(ctx, 500*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
			cur := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(&d), cur); err != nil {
				return apierrors.IsNotFound(err), nil
			}
			return cur.Status.Replicas == 0, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for Deployment %s/%s of %s to scale to 0: %w", d.Namespace, d.Name, p.ManifestLabel(), err)
		}
	}
	return nil
}

// driftWarnings compares the running Deployments with the installed version's components (what
// the user got) and the new ones: args and env the user added or changed and that the new
// components do not carry are lost by the upgrade. Without the installed version's components,
// every running arg/env the new components lack is reported.
func driftWarnings(label string, live []appsv1.Deployment, oldObjs, newObjs []unstructured.Unstructured) []DriftWarning {
	oldDeps, newDeps := deploymentsByName(oldObjs), deploymentsByName(newObjs)
	var out []DriftWarning
	for _, d := range live {
		base, ok := oldDeps[d.Name]
		if !ok || oldObjs == nil {
			base = newDeps[d.Name]
		}
		next := newDeps[d.Name]
		for _, ct := range d.Spec.Template.Spec.Containers {
			bc, nc := container(base, ct.Name), container(next, ct.Name)
			for _, a := range ct.Args {
				if !contains(bc.Args, a) && !contains(nc.Args, a) {
					out = append(out, DriftWarning{Provider: label, Deployment: d.Namespace + "/" + d.Name, Container: ct.Name, What: "arg", Value: a})
				}
			}
			for _, e := range ct.Env {
				s := envString(e.Name, e.Value, e.ValueFrom)
				if !containsEnv(bc.Env, s) && !containsEnv(nc.Env, s) {
					out = append(out, DriftWarning{Provider: label, Deployment: d.Namespace + "/" + d.Name, Container: ct.Name, What: "env", Value: s})
				}
			}
		}
	}
	return out
}

type containerSpec struct {
	Args []string
	Env  []string
}

func container(d *appsv1.Deployment, name string) containerSpec {
	var cs containerSpec
	if d == nil {
		return cs
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			cs.Args = c.Args
			for _, e := range c.Env {
				cs.Env = append(cs.Env, envString(e.Name, e.Value, e.ValueFrom))
			}
		}
	}
	return cs
}

func envString(name, value string, from *corev1.EnvVarSource) string {
	if from != nil {
		// The API server defaults fieldRef.apiVersion to v1: compare without it.
		f := from.DeepCopy()
		if f.FieldRef != nil && f.FieldRef.APIVersion == "v1" {
			f.FieldRef.APIVersion = ""
		}
		if f.ResourceFieldRef != nil && f.ResourceFieldRef.Divisor.IsZero() {
			f.ResourceFieldRef.Divisor = resource.Quantity{}
		}
		b, _ := json.Marshal(f)
		return fmt.Sprintf("%s from %s", name, b)
	}
	return name + "=" + value
}

func runtimeConvert(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsEnv(list []string, s string) bool { return contains(list, s) }

func deploymentsByName(objs []unstructured.Unstructured) map[string]*appsv1.Deployment {
	out := map[string]*appsv1.Deployment{}
	for i := range objs {
		u := &objs[i]
		if u.GetKind() != "Deployment" || u.GroupVersionKind().Group != "apps" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtimeConvert(u, d); err == nil {
			out[u.GetName()] = d
		}
	}
	return out
}

// String lists targets as `name from → to`.
func (r *ApplyResult) String() string {
	var b strings.Builder
	for _, p := range r.Providers {
		fmt.Fprintf(&b, "%s %s -> %s\n", p.Provider.String(), p.From, p.To)
	}
	return b.String()
}
