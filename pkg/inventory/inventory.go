package inventory

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/provider"
)

// Names and labels of the inventory, as clusterctl writes them.
const (
	Group   = "clusterctl.cluster.x-k8s.io"
	Version = "v1alpha3"
	Kind    = "Provider"
	CRDName = "providers.clusterctl.cluster.x-k8s.io"

	// ClusterctlLabel marks every object clusterctl-compatible tools manage.
	ClusterctlLabel = "clusterctl.cluster.x-k8s.io"
	// ProviderLabel names the provider an object belongs to (its manifest label).
	ProviderLabel = "cluster.x-k8s.io/provider"
	// CoreLabel marks clusterctl's own objects: "inventory" or "cert-manager".
	CoreLabel          = "clusterctl.cluster.x-k8s.io/core"
	CoreInventoryValue = "inventory"

	// ArtifactAnnotation records, on an entry capctl wrote, the OCI artifact the provider's
	// components were installed from, by digest (HOST/PATH/NAME@sha256:...). clusterctl ignores
	// it; an install from another kind of repository removes it.
	ArtifactAnnotation = "capctl.cluster.x-k8s.io/artifact"
)

// GVK is the Provider kind.
var GVK = schema.GroupVersionKind{Group: Group, Version: Version, Kind: Kind}

//go:embed crd.yaml
var crdYAML []byte

// ErrNoInventory means the management cluster has no inventory CRD: nothing was ever installed
// there by clusterctl or capctl.
var ErrNoInventory = errors.New("the management cluster has no provider inventory; run `capctl init` first")

// Provider is one entry of the inventory.
type Provider struct {
	Name             string        `json:"name"` // object name: the manifest label
	Namespace        string        `json:"namespace"`
	ProviderName     string        `json:"providerName"`
	Type             provider.Type `json:"type"`
	Version          string        `json:"version"`
	WatchedNamespace string        `json:"watchedNamespace,omitempty"`
	// Artifact is the OCI artifact installed, by digest (ArtifactAnnotation), "" for none.
	Artifact string `json:"artifact,omitempty"`
}

// New returns the inventory entry clusterctl would write for a provider.
func New(name string, t provider.Type, version, namespace string) Provider {
	return Provider{Name: provider.ManifestLabel(name, t), Namespace: namespace, ProviderName: name, Type: t, Version: version}
}

// ManifestLabel is the provider's `cluster.x-k8s.io/provider` label value.
func (p Provider) ManifestLabel() string { return provider.ManifestLabel(p.ProviderName, p.Type) }

// String is `namespace/name` as users reference an installed provider.
func (p Provider) String() string { return p.Namespace + "/" + p.ProviderName }

// CRD returns the inventory CRD that capctl installs when it is missing.
func CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(crdYAML, crd); err != nil {
		return nil, fmt.Errorf("decoding the embedded inventory CRD: %w", err)
	}
	return crd, nil
}

// ToUnstructured renders the entry as the object clusterctl writes.
func (p Provider) ToUnstructured() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(GVK)
	u.SetName(p.ManifestLabel())
	u.SetNamespace(p.Namespace)
	u.SetLabels(map[string]string{
		ClusterctlLabel: "",
		ProviderLabel:   p.ManifestLabel(),
		CoreLabel:       CoreInventoryValue,
	})
	u.Object["providerName"] = p.ProviderName
	u.Object["type"] = string(p.Type)
	u.Object["version"] = p.Version
	if p.WatchedNamespace != "" {
		u.Object["watchedNamespace"] = p.WatchedNamespace
	}
	if p.Artifact != "" {
		u.SetAnnotations(map[string]string{ArtifactAnnotation: p.Artifact})
	}
	return u
}

// FromUnstructured reads an inventory object.
func FromUnstructured(u *unstructured.Unstructured) Provider {
	str := func(k string) string { s, _, _ := unstructured.NestedString(u.Object, k); return s }
	return Provider{
		Name: u.GetName(), Namespace: u.GetNamespace(),
		ProviderName: str("providerName"), Type: provider.Type(str("type")),
		Version: str("version"), WatchedNamespace: str("watchedNamespace"),
		Artifact: u.GetAnnotations()[ArtifactAnnotation],
	}
}

// List reads the whole inventory, sorted by type order then name. It returns ErrNoInventory
// (wrapped) when the CRD is not installed.
func List(ctx context.Context, c client.Reader) ([]Provider, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(GVK.GroupVersion().WithKind(Kind + "List"))
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, ErrNoInventory
		}
		return nil, fmt.Errorf("reading the provider inventory: %w", err)
	}
	out := make([]Provider, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, FromUnstructured(&list.Items[i]))
	}
	provider.SortByTypeThenName(out, func(p Provider) provider.Type { return p.Type }, func(p Provider) string { return p.ProviderName })
	return out, nil
}

// EnsureCRD installs the inventory CRD when missing and waits until it is Established (1 min).
// An existing CRD without v1alpha3 is refused, as clusterctl does. The CRD carries clusterctl's
// labels exactly (only CoreLabel=inventory): ClusterctlLabel on it would make clusterctl move
// carry the inventory, so an existing CRD an older capctl labelled so is repaired.
func EnsureCRD(ctx context.Context, c client.Client) error {
	existing := &apiextensionsv1.CustomResourceDefinition{}
	err := c.Get(ctx, client.ObjectKey{Name: CRDName}, existing)
	switch {
	case err == nil:
		for _, v := range existing.Spec.Versions {
			if v.Name == Version {
				if _, extra := existing.Labels[ClusterctlLabel]; extra {
					patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+ClusterctlLabel+`":null}}}`))
					if err := c.Patch(ctx, existing, patch); err != nil {
						return fmt.Errorf("removing the %s label from the inventory CRD %s (clusterctl does not set it): %w", ClusterctlLabel, CRDName, err)
					}
				}
				return waitEstablished(ctx, c)
			}
		}
		return fmt.Errorf("the inventory CRD %s exists but does not define version %s", CRDName, Version)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading the inventory CRD %s: %w", CRDName, err)
	}
	crd, err := CRD()
	if err != nil {
		return err
	}
	if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the inventory CRD %s: %w", CRDName, err)
	}
	return waitEstablished(ctx, c)
}

// crdWaitTimeout bounds each of EnsureCRD's waits: for the CRD to be Established, then served.
const crdWaitTimeout = time.Minute

func waitEstablished(ctx context.Context, c client.Client) error {
	if err := cluster.WaitEstablished(ctx, c, []string{CRDName}, crdWaitTimeout); err != nil {
		return fmt.Errorf("waiting for the inventory CRD %s to be established: %w", CRDName, err)
	}
	// Established does not mean discoverable yet: on a busy API server the discovery documents
	// lag, and a Write or List right after would fail with "no matches for kind Provider".
	if err := cluster.WaitServed(ctx, c.RESTMapper(), GVK, crdWaitTimeout); err != nil {
		return fmt.Errorf("waiting for the inventory kind %s to be served: %w", GVK, err)
	}
	return nil
}

// Write creates or updates the entry (merge of labels and fields, as clusterctl does).
func Write(ctx context.Context, c client.Client, p Provider) error {
	desired := p.ToUnstructured()
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(GVK)
	err := c.Get(ctx, client.ObjectKeyFromObject(desired), current)
	if apierrors.IsNotFound(err) {
		if err := c.Create(ctx, desired); err != nil {
			return fmt.Errorf("recording %s %s in the inventory: %w", p.ManifestLabel(), p.Version, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading inventory entry %s/%s: %w", p.Namespace, p.ManifestLabel(), err)
	}
	patch := client.MergeFrom(current.DeepCopy())
	labels := current.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range desired.GetLabels() {
		labels[k] = v
	}
	current.SetLabels(labels)
	ann := current.GetAnnotations()
	if p.Artifact != "" {
		if ann == nil {
			ann = map[string]string{}
		}
		ann[ArtifactAnnotation] = p.Artifact
	} else {
		delete(ann, ArtifactAnnotation)
	}
	current.SetAnnotations(ann)
	for _, k := range []string{"providerName", "type", "version"} {
		current.Object[k] = desired.Object[k]
	}
	if err := c.Patch(ctx, current, patch); err != nil {
		return fmt.Errorf("updating inventory entry %s/%s: %w", p.Namespace, p.ManifestLabel(), err)
	}
	return nil
}

// Delete removes the entry; a missing entry is not an error.
func Delete(ctx context.Context, c client.Client, p Provider) error {
	u := p.ToUnstructured()
	if err := c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing %s from the inventory: %w", p.String(), err)
	}
	return nil
}

// DefaultProviderName is the single provider name of type t, or "" when there are none or several
// (clusterctl's rule for defaulting --infrastructure and friends).
func DefaultProviderName(items []Provider, t provider.Type) string {
	names := map[string]bool{}
	for _, p := range items {
		if p.Type == t {
			names[p.ProviderName] = true
		}
	}
	if len(names) != 1 {
		return ""
	}
	for n := range names {
		return n
	}
	return ""
}

// Core returns the core provider entry, if installed.
func Core(items []Provider) (Provider, bool) {
	for _, p := range items {
		if p.Type == provider.CoreProviderType {
			return p, true
		}
	}
	return Provider{}, false
}

// Find returns the entries with the given name and type.
func Find(items []Provider, name string, t provider.Type) []Provider {
	var out []Provider
	for _, p := range items {
		if p.ProviderName == name && p.Type == t {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}
