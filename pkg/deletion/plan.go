package deletion

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// Selection names a provider to delete, as typed on the command line.
type Selection struct {
	Type      provider.Type
	Name      string
	Namespace string // optional: needed only when several instances exist
	Version   string // optional: must equal the installed version
}

func (s Selection) String() string {
	r := provider.Reference{Namespace: s.Namespace, Name: s.Name, Version: s.Version}
	return fmt.Sprintf("%s %s", s.Type.Flag(), r)
}

// Request choose what to delete.
type Request struct {
	Providers []Selection
	// All deletes every provider of the inventory.
	All bool
	// IncludeNamespace deletes the providers' namespaces (and so everything in them).
	IncludeNamespace bool
	// IncludeCRD deletes the providers' CRDs; refused while objects of those CRDs exist.
	IncludeCRD bool
	// IncludeCertManager deletes cert-manager too, when capctl or clusterctl installed it and no
	// remaining provider or object needs it.
	IncludeCertManager bool
	// Concurrency bounds parallel LISTs and DELETEs (default 8).
	Concurrency int
}

// Object is one object that will be deleted or is kept.
type Object struct {
	GVK       schema.GroupVersionKind `json:"-"`
	Kind      string                  `json:"kind"`
	Namespace string                  `json:"namespace,omitempty"`
	Name      string                  `json:"name"`
}

func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// ProviderPlan is what happens to one provider.
type ProviderPlan struct {
	Provider inventory.Provider `json:"provider"`
	// Delete lists the components to delete, in deletion order.
	Delete []Object `json:"delete"`
	// KeptCRDs are the provider's CRDs that stay (no --include-crd).
	KeptCRDs []string `json:"keptCRDs,omitempty"`
	// Namespace is the provider namespace; NamespaceDeleted says whether it goes.
	Namespace        string `json:"namespace"`
	NamespaceDeleted bool   `json:"namespaceDeleted"`
	// KeptClusterScoped are cluster-wide objects with the provider's label that stay because
	// another instance of the same provider may own them.
	KeptClusterScoped []Object `json:"keptClusterScoped,omitempty"`
}

// CertManagerPlan is what happens to cert-manager.
type CertManagerPlan struct {
	// Deleted tells whether cert-manager goes; Reason says why it stays otherwise.
	Deleted bool     `json:"deleted"`
	Reason  string   `json:"reason,omitempty"`
	Delete  []Object `json:"delete,omitempty"`
}

// Plan is everything delete will do, computed without writing anything.
type Plan struct {
	// Providers in deletion order: the core provider last (deletionOrder).
	Providers   []ProviderPlan  `json:"providers"`
	CertManager CertManagerPlan `json:"certManager"`
	// Remaining are the inventory entries that stay installed.
	Remaining []inventory.Provider `json:"remaining,omitempty"`
	// Warnings are facts the user should know before confirming.
	Warnings []string `json:"warnings,omitempty"`
	// Unlisted are the kinds that could not be listed: a plan with any is incomplete, and Apply
	// refuses it (see complete.go).
	Unlisted []authz.Unreadable `json:"unlisted,omitempty"`
	// ListedTypes is how many API types were listed to find the components.
	ListedTypes int `json:"listedTypes"`
}

// Total is the number of objects the plan deletes (inventory entries not counted).
func (p *Plan) Total() int {
	n := len(p.CertManager.Delete)
	for _, pp := range p.Providers {
		n += len(pp.Delete)
	}
	return n
}

// ExistingObjectsError is the --include-crd refusal: objects of the CRDs still exist.
type ExistingObjectsError struct {
	// Counts maps provider manifest label → kind → number of objects.
	Counts map[string]map[string]int
}

func (e *ExistingObjectsError) Error() string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(e.Counts)) {
		var kinds []string
		for _, k := range slices.Sorted(maps.Keys(e.Counts[p])) {
			kinds = append(kinds, fmt.Sprintf("%s: %d", k, e.Counts[p][k]))
		}
		parts = append(parts, fmt.Sprintf("%q: [%s]", p, strings.Join(kinds, ", ")))
	}
	return fmt.Sprintf("found existing objects for provider CRDs %s. Please delete these objects first before running capctl delete with --include-crd (or run it without --include-crd to keep the CRDs and their objects)",
		strings.Join(parts, "; "))
}

// Validate checks options that need no cluster.
func (o Request) Validate() error {
	if o.All && len(o.Providers) > 0 {
		return errors.New("--all cannot be combined with provider flags: delete every provider with --all, or name them")
	}
	if !o.All && len(o.Providers) == 0 {
		return errors.New("at least one of --core, --bootstrap, --control-plane, --infrastructure, --ipam, --runtime-extension, --addon should be specified or the --all flag should be set")
	}
	for _, s := range o.Providers {
		if !s.Type.Valid() {
			return fmt.Errorf("invalid provider type %q", s.Type)
		}
		if s.Type == provider.CoreProviderType && s.Name != provider.CoreProviderName {
			return fmt.Errorf("the core provider is named %q, not %q", provider.CoreProviderName, s.Name)
		}
		if s.Version == "latest" {
			return fmt.Errorf("%s: give the installed version or none", s)
		}
	}
	return nil
}

// resolve picks the inventory entries the selections name.
func resolve(items []inventory.Provider, opts Request) ([]inventory.Provider, error) {
	if len(items) == 0 {
		return nil, errors.New("no providers are installed in this management cluster (the inventory is empty); nothing to delete")
	}
	if opts.All {
		return append([]inventory.Provider(nil), items...), nil
	}
	installed := func() string {
		var s []string
		for _, p := range items {
			s = append(s, fmt.Sprintf("%s (%s, %s in %s)", p.ManifestLabel(), p.Type, p.Version, p.Namespace))
		}
		return strings.Join(s, ", ")
	}
	var out []inventory.Provider
	seen := map[string]bool{}
	for _, s := range opts.Providers {
		matches := inventory.Find(items, s.Name, s.Type)
		if s.Namespace != "" {
			var inNS []inventory.Provider
			for _, m := range matches {
				if m.Namespace == s.Namespace {
					inNS = append(inNS, m)
				}
			}
			matches = inNS
		}
		switch {
		case len(matches) == 0:
			return nil, fmt.Errorf("provider %s is not installed (installed: %s)", s, installed())
		case len(matches) > 1:
			var nss []string
			for _, m := range matches {
				nss = append(nss, m.Namespace)
			}
			return nil, fmt.Errorf("failed to identify the namespace for the %q provider: it is installed in %s; name one as namespace/%s", s.Name, strings.Join(nss, ", "), s.Name)
		}
		m := matches[0]
		if s.Version != "" && s.Version != m.Version {
			return nil, fmt.Errorf("provider %s is installed at version %s, not %s: omit the version or give the installed one", s, m.Version, s.Version)
		}
		key := m.Namespace + "/" + m.Name
		if !seen[key] {
			seen[key] = true
			out = append(out, m)
		}
	}
	provider.SortByTypeThenName(out, func(p inventory.Provider) provider.Type { return p.Type }, func(p inventory.Provider) string { return p.ProviderName })
	return out, nil
}

// deletionOrder is the order providers are deleted in: the core provider last. clusterctl refuses
// to read a management cluster whose inventory lists providers but not the core one, so a delete
// killed half-way must never have removed the core provider's entry while others remain.
func deletionOrder(selected []inventory.Provider) []inventory.Provider {
	out := make([]inventory.Provider, 0, len(selected))
	var core []inventory.Provider
	for _, p := range selected {
		if p.Type == provider.CoreProviderType {
			core = append(core, p)
			continue
		}
		out = append(out, p)
	}
	return append(out, core...)
}

type apiType struct {
	gvk        schema.GroupVersionKind
	resource   string
	namespaced bool
}

// listedObject is an object found by the component search (metadata only).
type listedObject struct {
	Object
	labels     map[string]string
	namespaced bool
}

// BuildPlan is the planning half of `capctl delete` on the Env's management cluster (buildPlan):
// what delete would do; it writes nothing.
func BuildPlan(ctx context.Context, e env.Env, req Request) (*Plan, error) {
	c, err := e.Single()
	if err != nil {
		return nil, err
	}
	return buildPlan(ctx, c, req)
}

// buildPlan reads the management cluster and works out what delete would do. It writes nothing.
// Requests: the inventory, one discovery, one CRD LIST, one metadata LIST per listable type (in
// parallel), and with --include-crd one metadata LIST per CRD of the selected providers.
func buildPlan(ctx context.Context, c *cluster.Client, opts Request) (*Plan, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	items, err := inventory.List(ctx, c)
	if apierrors.IsForbidden(err) {
		// Say which of the inventory's verbs are missing, with a snippet, rather than the
		// server's one refusal. The kinds delete would then list and delete are unknown until
		// the inventory is read; `capctl auth can-i delete` checks them all.
		x := authz.Expansion{Kinds: map[string][]string{authz.EveryComponentKind: {}, authz.EveryListableKind: {}}}
		if perr := authz.Preflight(ctx, "delete", x, authz.Cluster{Side: authz.Management, Client: c, Host: c.Config.Host}); perr != nil {
			return nil, fmt.Errorf("reading the inventory: %w", perr)
		}
	}
	if err != nil {
		return nil, err
	}
	selected, err := resolve(items, opts)
	if err != nil {
		return nil, err
	}
	plan := &Plan{}
	byLabel := map[string]inventory.Provider{}
	instances := map[string]int{}
	for _, p := range items {
		instances[p.ManifestLabel()]++
	}
	for _, p := range selected {
		byLabel[p.ManifestLabel()] = p
	}
	for _, p := range items {
		if _, ok := byLabel[p.ManifestLabel()]; !ok || byLabel[p.ManifestLabel()].Namespace != p.Namespace {
			plan.Remaining = append(plan.Remaining, p)
		}
	}

	// Provider CRDs: their kinds are not components (excluded from the search), and they are the
	// CRDs --include-crd deletes.
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds, client.HasLabels{inventory.ProviderLabel}); err != nil {
		return nil, fmt.Errorf("listing provider CRDs: %w", err)
	}
	excluded := map[schema.GroupResource]bool{{Group: inventory.Group, Resource: "providers"}: true}
	for _, crd := range crds.Items {
		excluded[schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}] = true
	}

	if opts.IncludeCRD {
		if err := checkNoObjects(ctx, c, crds.Items, byLabel, opts.concurrency()); err != nil {
			return nil, err
		}
	}

	types, unlisted, err := listableTypes(c.Discovery, excluded)
	if err != nil {
		return nil, err
	}
	plan.Unlisted = append(plan.Unlisted, unlisted...)
	plan.ListedTypes = len(types)

	sel, err := componentSelector(selected, opts.IncludeCertManager)
	if err != nil {
		return nil, err
	}
	found, unlisted, err := listAll(ctx, c, types, sel, opts.concurrency())
	if err != nil {
		return nil, err
	}
	plan.Unlisted = append(plan.Unlisted, unlisted...)

	plans := map[string]*ProviderPlan{}
	for _, p := range selected {
		plans[p.ManifestLabel()] = &ProviderPlan{Provider: p, Namespace: p.Namespace}
	}
	certManagerObjs := assign(found, plans, instances, opts)
	for _, p := range deletionOrder(selected) {
		pp := plans[p.ManifestLabel()]
		sortForDelete(pp.Delete)
		sort.Strings(pp.KeptCRDs)
		plan.Providers = append(plan.Providers, *pp)
	}

	cm, err := planCertManager(ctx, c, opts, plan, certManagerObjs, types)
	if err != nil {
		return nil, err
	}
	plan.CertManager = cm
	return plan, nil
}

// assign sorts the components found to the plans of their providers (by manifest label),
// applying clusterctl's keep rules, and returns cert-manager's objects, which no provider owns.
// instances counts the installed instances of each provider.
func assign(found []listedObject, plans map[string]*ProviderPlan, instances map[string]int, opts Request) (certManagerObjs []listedObject) {
	// With --include-namespace the namespace takes its contents with it, but only a Namespace
	// labelled as the provider's is deleted (as clusterctl does); otherwise objects go one by one.
	if opts.IncludeNamespace {
		for _, o := range found {
			pp, ok := plans[o.labels[inventory.ProviderLabel]]
			if ok && o.GVK.Group == "" && o.GVK.Kind == "Namespace" && o.Name == pp.Namespace && o.labels[inventory.CoreLabel] == "" {
				pp.NamespaceDeleted = true
			}
		}
	}
	for _, o := range found {
		if o.labels[inventory.CoreLabel] == certmanager.CoreValue {
			certManagerObjs = append(certManagerObjs, o)
			continue
		}
		pp, ok := plans[o.labels[inventory.ProviderLabel]]
		if !ok {
			continue // another provider's component
		}
		ns := pp.Provider.Namespace
		switch {
		case o.namespaced:
			if o.Namespace != ns {
				continue // labelled like the provider but outside its namespace: not ours
			}
			if pp.NamespaceDeleted {
				continue // goes with the namespace
			}
		case o.GVK.Kind == "CustomResourceDefinition" && o.GVK.Group == apiextensionsv1.GroupName:
			if !opts.IncludeCRD {
				pp.KeptCRDs = append(pp.KeptCRDs, o.Name)
				continue
			}
		case o.GVK.Kind == "Namespace" && o.GVK.Group == "":
			if o.Name != ns || !pp.NamespaceDeleted {
				continue
			}
		case isWebhookConfiguration(o.GVK):
			// Webhooks go with the controller that serves them: always deleted.
		default:
			// Cluster-wide objects (ClusterRoles, bindings, ...): clusterctl deletes only those
			// prefixed with the namespace (a legacy of multi-instance installs). When the provider has
			// a single instance its label identifies them unambiguously, so capctl deletes them too.
			if !strings.HasPrefix(o.Name, ns+"-") && instances[pp.Provider.ManifestLabel()] > 1 {
				pp.KeptClusterScoped = append(pp.KeptClusterScoped, o.Object)
				continue
			}
		}
		pp.Delete = append(pp.Delete, o.Object)
	}
	return certManagerObjs
}

func (o Request) concurrency() int {
	if o.Concurrency > 0 {
		return o.Concurrency
	}
	return 8
}

func isWebhookConfiguration(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "admissionregistration.k8s.io" &&
		(gvk.Kind == "ValidatingWebhookConfiguration" || gvk.Kind == "MutatingWebhookConfiguration")
}

// planCertManager decides about cert-manager: kept unless asked for, installed by
// capctl/clusterctl (objects labelled core=cert-manager in its namespaces), and not needed by a
// remaining provider or by cert-manager objects that are not being deleted.
func planCertManager(ctx context.Context, c client.Client, opts Request, plan *Plan, objs []listedObject, types []apiType) (CertManagerPlan, error) {
	if !opts.IncludeCertManager {
		return CertManagerPlan{Reason: "kept (pass --include-cert-manager to delete it when capctl installed it)"}, nil
	}
	own, err := certmanager.Owner(ctx, c)
	if err != nil {
		return CertManagerPlan{}, err
	}
	if !own.Managed {
		return CertManagerPlan{}, fmt.Errorf("--include-cert-manager: cert-manager was not installed by capctl or clusterctl (no object labelled %s=%s in namespaces %s or kube-system), so capctl will not delete it; remove the flag",
			inventory.CoreLabel, certmanager.CoreValue, certmanager.Namespace)
	}
	if len(plan.Remaining) > 0 {
		var names []string
		for _, p := range plan.Remaining {
			names = append(names, p.Namespace+"/"+p.ManifestLabel())
		}
		return CertManagerPlan{}, fmt.Errorf("--include-cert-manager: cert-manager is still needed by providers that stay installed (%s); delete them too (--all) or remove the flag", strings.Join(names, ", "))
	}
	// cert-manager resources (Certificates, Issuers, ...) that are not components being deleted
	// would lose their controller: refuse and list them.
	deleting := map[string]bool{}
	for _, pp := range plan.Providers {
		for _, o := range pp.Delete {
			deleting[o.String()] = true
		}
	}
	var users []string
	for _, t := range types {
		if !certmanager.IsAPIGroup(t.gvk.Group) {
			continue
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(t.gvk.GroupVersion().WithKind(t.gvk.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			return CertManagerPlan{}, fmt.Errorf("listing %s to see whether cert-manager is still used: %w", t.resource, err)
		}
		for _, it := range list.Items {
			o := Object{GVK: t.gvk, Kind: t.gvk.Kind, Namespace: it.Namespace, Name: it.Name}
			if deleting[o.String()] {
				continue
			}
			if providerNamespaceDeleted(plan, it.Namespace) {
				continue
			}
			users = append(users, o.String())
		}
	}
	if len(users) > 0 {
		sort.Strings(users)
		return CertManagerPlan{}, fmt.Errorf("--include-cert-manager: cert-manager is still used by %d object(s) that are not being deleted: %s; delete them first or remove the flag",
			len(users), strings.Join(users, ", "))
	}
	cm := CertManagerPlan{Deleted: true}
	nsDeleted := false
	for _, o := range objs {
		if o.GVK.Kind == "Namespace" && o.GVK.Group == "" && o.Name == certmanager.Namespace {
			nsDeleted = true
		}
	}
	for _, o := range objs {
		if nsDeleted && o.namespaced && o.Namespace == certmanager.Namespace {
			continue
		}
		cm.Delete = append(cm.Delete, o.Object)
	}
	sortForDelete(cm.Delete)
	return cm, nil
}

func providerNamespaceDeleted(plan *Plan, ns string) bool {
	for _, pp := range plan.Providers {
		if pp.NamespaceDeleted && pp.Namespace == ns {
			return true
		}
	}
	return false
}

// deleteRank orders deletion: webhook configurations first (nothing calls a webhook whose
// server is gone), then namespaced objects, other cluster-wide objects, CRDs, and namespaces last.
func deleteRank(o Object) int {
	switch {
	case isWebhookConfiguration(o.GVK):
		return 0
	case o.Namespace != "":
		return 1
	case o.GVK.Kind == "CustomResourceDefinition":
		return 3
	case o.GVK.Kind == "Namespace" && o.GVK.Group == "":
		return 4
	default:
		return 2
	}
}

func sortForDelete(objs []Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		ri, rj := deleteRank(objs[i]), deleteRank(objs[j])
		if ri != rj {
			return ri < rj
		}
		return objs[i].String() < objs[j].String()
	})
}
