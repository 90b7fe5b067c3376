package upgrade

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/repository"
)

// RepositoryCatalog is the Catalog of the providers' repositories (built-ins and clusterctl.yaml's
// `providers:`), read through pkg/repository: overrides folder, cache, local or GitHub repository.
type RepositoryCatalog struct {
	Client *repository.Client
}

// Provider returns the repository entry of an installed provider.
func (r RepositoryCatalog) Provider(p inventory.Provider) (repository.Provider, error) {
	rp, err := r.Client.Provider(p.ProviderName, p.Type)
	if err != nil {
		return repository.Provider{}, fmt.Errorf("%s (installed in %s): %w; add it to the `providers:` list of clusterctl.yaml", p.ManifestLabel(), p.Namespace, err)
	}
	return rp, nil
}

// Versions lists the provider's versions.
func (r RepositoryCatalog) Versions(ctx context.Context, p inventory.Provider) ([]string, error) {
	rp, err := r.Provider(p)
	if err != nil {
		return nil, err
	}
	return r.Client.Versions(ctx, rp)
}

// Series reads the release series of version's metadata.yaml; a missing metadata.yaml means the
// version has no published release.
func (r RepositoryCatalog) Series(ctx context.Context, p inventory.Provider, version string) ([]Series, error) {
	rp, err := r.Provider(p)
	if err != nil {
		return nil, err
	}
	m, err := r.Client.Metadata(ctx, rp, version)
	if err != nil {
		if errors.Is(err, repository.ErrNotFound) {
			return nil, fmt.Errorf("%s %s: %w (%v)", p.ManifestLabel(), version, ErrNotPublished, err)
		}
		return nil, err
	}
	out := make([]Series, 0, len(m.ReleaseSeries))
	for _, s := range m.ReleaseSeries {
		if s.Major < 0 || s.Minor < 0 {
			continue
		}
		out = append(out, Series{Major: uint64(s.Major), Minor: uint64(s.Minor), Contract: s.Contract})
	}
	return out, nil
}

// Components returns the processed components of version of the installed provider, moved into
// targetNamespace (variables from the environment and the config, image overrides applied).
func (r RepositoryCatalog) Components(ctx context.Context, p inventory.Provider, version, targetNamespace string) ([]unstructured.Unstructured, error) {
	rp, err := r.Provider(p)
	if err != nil {
		return nil, err
	}
	comps, err := r.Client.Components(ctx, rp, repository.ComponentsOptions{Version: version, TargetNamespace: targetNamespace})
	if err != nil {
		return nil, err
	}
	return comps.Objects, nil
}

// Artifact names the OCI artifact version of the installed provider comes from, by digest; ""
// when its repository is not an OCI registry.
func (r RepositoryCatalog) Artifact(ctx context.Context, p inventory.Provider, version string) (string, error) {
	rp, err := r.Provider(p)
	if err != nil {
		return "", err
	}
	return r.Client.Artifact(ctx, rp, version)
}

// CertManager fetches the configured cert-manager components.
func (r RepositoryCatalog) CertManager(ctx context.Context) (*certmanager.Components, error) {
	return certmanager.Fetch(ctx, r.Client, "")
}
