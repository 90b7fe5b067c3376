package diagnose

import (
	"context"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// FetchManagement reads the management side: the inventory, the providers' CRDs (their contract
// labels), controller Deployments (availability, --*-concurrency flags), webhooks (endpoints
// ready, CA injected) and cert-manager. The cost does not depend on the number of clusters: one
// LIST per kind plus a few reads per provider.
//
// A kind it may not read (RBAC) does not stop it: the kind is named in Management.Unread and the
// checks that needed it are marked not checked (Management.NotChecked, ProviderStatus.NotChecked),
// never reported as passed. Deployments it may not list cluster-wide are listed per provider
// namespace, so one forbidden namespace leaves only its providers unchecked.
func FetchManagement(ctx context.Context, c client.Client) (*Management, error) {
	r := &managementRead{c: c, m: &Management{CRDProviders: map[string]string{}}}
	items, err := inventory.List(ctx, c)
	if err != nil {
		if !authz.Tolerable(err) {
			return nil, err
		}
		u := authz.NewUnreadable(inventory.CRDName, "", "list", err)
		r.reads.Add(u)
		r.m.notCheck(checkInventory, u)
	}
	if err := r.listCRDs(ctx); err != nil {
		return nil, err
	}
	if r.deps, r.unreadNS, err = listDeployments(ctx, c, &r.reads, items); err != nil {
		return nil, fmt.Errorf("listing the providers' Deployments: %w", err)
	}
	if err := r.listWebhooks(ctx); err != nil {
		return nil, err
	}
	for _, it := range items {
		p := r.provider(ctx, it)
		if it.Type == provider.CoreProviderType {
			r.m.CoreContract = p.Contract
		}
		r.m.Providers = append(r.m.Providers, p)
	}
	r.checkContracts()
	if err := r.readCertManager(ctx); err != nil {
		return nil, err
	}
	r.spreadNotChecked()
	r.m.Unread = r.reads.Unread()
	return r.m, nil
}

// managementRead is one FetchManagement: the reads so far (and those refused), and what the
// per-provider checks share.
type managementRead struct {
	c        client.Client
	reads    authz.Reads
	m        *Management
	crdsOf   map[string][]metav1.PartialObjectMetadata // provider label -> its CRDs
	deps     *appsv1.DeploymentList
	unreadNS map[string]authz.Unreadable
	hooks    []unstructured.Unstructured
}

// listCRDs lists the providers' CRDs (labelled with their provider).
func (r *managementRead) listCRDs(ctx context.Context) error {
	crds := &metav1.PartialObjectMetadataList{}
	crds.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if ok, err := r.reads.List(ctx, r.c, crds, client.HasLabels{inventory.ProviderLabel}); err != nil {
		return fmt.Errorf("listing the providers' CRDs: %w", err)
	} else if !ok {
		r.m.notCheck(checkContract, lastOf(&r.reads, authz.ResourceOf(r.c, crds)))
	}
	r.crdsOf = map[string][]metav1.PartialObjectMetadata{}
	for _, crd := range crds.Items {
		label := crd.Labels[inventory.ProviderLabel]
		r.m.CRDProviders[crd.Name] = label
		r.crdsOf[label] = append(r.crdsOf[label], crd)
	}
	return nil
}

// listWebhooks lists the webhook configurations: cluster-scoped and labelled with their provider.
func (r *managementRead) listWebhooks(ctx context.Context) error {
	for _, kind := range []string{"ValidatingWebhookConfigurationList", "MutatingWebhookConfigurationList"} {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("admissionregistration.k8s.io/v1")
		l.SetKind(kind)
		ok, err := r.reads.List(ctx, r.c, l, client.HasLabels{inventory.ProviderLabel})
		if err != nil {
			return fmt.Errorf("listing %s: %w", strings.TrimSuffix(kind, "List"), err)
		}
		if !ok {
			r.m.notCheck(checkWebhook, lastOf(&r.reads, authz.ResourceOf(r.c, l)))
		}
		r.hooks = append(r.hooks, l.Items...)
	}
	return nil
}

// provider is the status of one inventory entry: its CRDs and contract, its Deployments and
// webhooks, checked as init and upgrade wait on them.
func (r *managementRead) provider(ctx context.Context, it inventory.Provider) ProviderStatus {
	label := it.ManifestLabel()
	p := ProviderStatus{Name: it.ProviderName, Type: it.Type, Version: it.Version, Namespace: it.Namespace, ManifestLabel: label}
	if u, ok := r.unreadNS[it.Namespace]; ok {
		p.notCheck(checkController, u)
	}
	labels := make([]map[string]string, 0, len(r.crdsOf[label]))
	for _, crd := range r.crdsOf[label] {
		p.CRDs = append(p.CRDs, crd.Name)
		labels = append(labels, crd.Labels)
	}
	p.Contract = contract.NewestDeclared(labels...)
	sort.Strings(p.CRDs)

	var objs []unstructured.Unstructured
	for i := range r.deps.Items {
		d := &r.deps.Items[i]
		if d.Namespace != it.Namespace || d.Labels[inventory.ProviderLabel] != label {
			continue
		}
		ds := DeploymentStatus{Name: d.Name, Concurrency: ConcurrencyFlags(d)}
		if d.Spec.Replicas != nil && *d.Spec.Replicas == 0 {
			ds.ScaledToZero = true
		}
		for _, cd := range d.Status.Conditions {
			if cd.Type == appsv1.DeploymentAvailable {
				ds.Since = cd.LastTransitionTime.Time
			}
		}
		p.Deployments = append(p.Deployments, ds)
		objs = append(objs, install.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}.Object())
	}
	for i := range r.hooks {
		if r.hooks[i].GetLabels()[inventory.ProviderLabel] == label && webhookInNamespace(&r.hooks[i], it.Namespace) {
			objs = append(objs, r.hooks[i])
		}
	}
	r.checkObjects(ctx, &p, objs)
	return p
}

// checkObjects runs the one home for "is it usable" (install.Diagnose, the checks init and
// upgrade wait on) over a provider's Deployments and webhooks; a state it may not read is not
// checked, never passed.
func (r *managementRead) checkObjects(ctx context.Context, p *ProviderStatus, objs []unstructured.Unstructured) {
	checks := install.Diagnose(ctx, r.c, objs, false)
	p.ControllerAvailable = len(p.Deployments) > 0
	for _, ch := range checks {
		if ch.What == "available" {
			if authz.Tolerable(ch.Err) {
				u := authz.FromError(ch.Object.Namespace, ch.Err)
				r.reads.Add(u)
				p.notCheck(checkController, u)
				continue
			}
			for i := range p.Deployments {
				if p.Deployments[i].Name == ch.Object.Name {
					p.Deployments[i].Available, p.Deployments[i].Reason = ch.Ready, ch.Reason
					// Scaled to 0 the Deployment reports Available, but no controller runs.
					if p.Deployments[i].ScaledToZero {
						p.Deployments[i].Available = false
						p.Deployments[i].Reason = fmt.Sprintf("Deployment %s/%s is scaled to 0 replicas: its controller does not run", p.Namespace, ch.Object.Name)
						ch.Ready = false
					}
				}
			}
			if !ch.Ready {
				p.ControllerAvailable = false
			}
			continue
		}
		if authz.Tolerable(ch.Err) {
			// Not known to fail: the state could not be read.
			u := authz.FromError(ch.Object.Namespace, ch.Err)
			r.reads.Add(u)
			p.notCheck(checkWebhook, u)
			continue
		}
		p.Webhooks = append(p.Webhooks, Check{Object: ch.Object.String(), What: ch.What, Ready: ch.Ready, Reason: ch.Reason})
	}
	if len(p.Webhooks) > 0 {
		ok := true
		for _, w := range p.Webhooks {
			ok = ok && w.Ready
		}
		p.WebhookAnswers = &ok
	}
}

// checkContracts compares every provider's contract with the core's (the current contract when
// no core provider declares one).
func (r *managementRead) checkContracts() {
	if r.m.CoreContract == "" {
		r.m.CoreContract = contract.Current
	}
	for i := range r.m.Providers {
		p := &r.m.Providers[i]
		p.ContractCompatible = p.Contract == "" || contract.IsCompatible(r.m.CoreContract, p.Contract)
	}
}

// readCertManager reads cert-manager's status and checks.
func (r *managementRead) readCertManager(ctx context.Context) error {
	cm, err := certmanager.Status(ctx, r.c)
	if err != nil {
		return err
	}
	r.m.CertManager = &CertManagerStatus{Installed: cm.Installed, Version: cm.Version, Ready: cm.Ready}
	for _, u := range cm.Unread {
		r.reads.Add(u)
		r.m.CertManager.NotChecked = append(r.m.CertManager.NotChecked, notCheckedReason(u))
	}
	for _, ch := range cm.Checks {
		r.m.CertManager.Checks = append(r.m.CertManager.Checks, Check{Object: ch.Object.String(), What: ch.What, Ready: ch.Ready, Reason: ch.Reason})
	}
	return nil
}

// spreadNotChecked gives each provider every check it was not given, so it can be shown alone
// (get providers over several management clusters).
func (r *managementRead) spreadNotChecked() {
	for i := range r.m.Providers {
		for check := range r.m.NotChecked {
			if check != checkInventory {
				r.m.Providers[i].notCheck(check, authz.Unreadable{})
				r.m.Providers[i].NotChecked[check] = r.m.NotChecked[check]
			}
		}
	}
}

// listDeployments lists the providers' Deployments: in one list of all namespaces, else (that list
// refused) one per provider namespace, so a namespace the user may not read leaves only its
// providers unchecked. It returns what it could not read by namespace.
func listDeployments(ctx context.Context, c client.Client, reads *authz.Reads, items []inventory.Provider) (*appsv1.DeploymentList, map[string]authz.Unreadable, error) {
	deps := &appsv1.DeploymentList{}
	var all authz.Reads // a refused cluster-wide list is not itself a gap when every namespace can be read
	ok, err := all.List(ctx, c, deps, client.HasLabels{inventory.ProviderLabel})
	if ok || err != nil {
		return deps, nil, err
	}
	unread := map[string]authz.Unreadable{}
	seen := map[string]bool{}
	for _, it := range items {
		if seen[it.Namespace] {
			continue
		}
		seen[it.Namespace] = true
		l := &appsv1.DeploymentList{}
		ok, err := reads.List(ctx, c, l, client.InNamespace(it.Namespace), client.HasLabels{inventory.ProviderLabel})
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			unread[it.Namespace] = lastOf(reads, authz.ResourceOf(c, l))
			continue
		}
		deps.Items = append(deps.Items, l.Items...)
	}
	if len(items) == 0 {
		// Nothing to fall back on: the cluster-wide list is the gap.
		for _, u := range all.Unread() {
			reads.Add(u)
		}
	}
	return deps, unread, nil
}

// lastOf is the last recorded read of resource (the one that just failed).
func lastOf(reads *authz.Reads, resource string) authz.Unreadable {
	var found authz.Unreadable
	for _, u := range reads.Unread() {
		if u.Resource == resource {
			found = u
		}
	}
	return found
}

// webhookInNamespace tells whether a webhook configuration calls a Service of the namespace (a
// provider installed twice in two namespaces has two configurations with the same label).
func webhookInNamespace(u *unstructured.Unstructured, ns string) bool {
	hs, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	for _, h := range hs {
		hm, _ := h.(map[string]any)
		if n, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "namespace"); n == ns {
			return true
		}
	}
	return len(hs) == 0
}

// ConcurrencyFlags are a Deployment's --concurrency and --<name>-concurrency container
// arguments (`--flag=value` or `--flag value`).
func ConcurrencyFlags(d *appsv1.Deployment) map[string]string {
	out := map[string]string{}
	for _, ct := range d.Spec.Template.Spec.Containers {
		args := append(append([]string{}, ct.Command...), ct.Args...)
		for i := 0; i < len(args); i++ {
			a := args[i]
			if !strings.HasPrefix(a, "--") {
				continue
			}
			name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if name != "concurrency" && !strings.HasSuffix(name, "-concurrency") {
				continue
			}
			if !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				val = args[i+1]
				i++
			}
			out["--"+name] = val
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
