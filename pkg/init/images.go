package clusterinit

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/repository"
)

// ImagesRequest are the inputs of ListImages.
type ImagesRequest struct {
	Selection
	TargetNamespace string
}

// Images is what ListImages found.
type Images struct {
	// Images is the sorted union of every image, after image overrides.
	Images []string `json:"images"`
	// ByComponent maps "cert-manager" and provider labels to their images.
	ByComponent map[string][]string `json:"byComponent"`
	// CertManagerIncluded: cert-manager would be installed, so its images are listed.
	CertManagerIncluded bool `json:"certManagerIncluded"`
	// NoCluster: no management cluster was consulted (first-run defaults and cert-manager assumed).
	NoCluster bool `json:"noCluster"`
}

// listImages lists the container images init would run. With cl.Cluster nil no cluster is read:
// the run is treated as a first run and cert-manager's images are included. With a cluster, the
// first-run defaults apply when it has no core provider, and cert-manager's images are included
// when certmanager.ImagesToInstall says init would install it. Nothing is installed.
func listImages(ctx context.Context, cl Clients, opts ImagesRequest) (*Images, error) {
	reqs, err := ParseRequests(opts.Selection)
	if err != nil {
		return nil, err
	}
	out := &Images{ByComponent: map[string][]string{}, NoCluster: cl.Cluster == nil, CertManagerIncluded: true}
	firstRun := true
	if cl.Cluster != nil {
		if err := contract.CheckManagementCluster(ctx, cl.Cluster, contract.AllowNotInstalled()); err != nil {
			return nil, err
		}
		installed, err := inventory.List(ctx, cl.Cluster)
		if err != nil && !errors.Is(err, inventory.ErrNoInventory) {
			return nil, err
		}
		_, hasCore := inventory.Core(installed)
		firstRun = !hasCore
	}
	items := reqs.Items
	if firstRun {
		items = reqs.withDefaults()
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("the management cluster already has a core provider; name the providers to list images for")
	}
	set := map[string]bool{}
	add := func(component string, imgs []string) {
		out.ByComponent[component] = append([]string(nil), imgs...)
		for _, i := range imgs {
			set[i] = true
		}
	}
	var reader client.Reader
	if cl.Cluster != nil {
		reader = cl.Cluster
	}
	cmImages, included, err := certmanager.ImagesToInstall(ctx, reader, cl.Repo)
	if err != nil {
		return nil, err
	}
	if out.CertManagerIncluded = included; included {
		add(certmanager.ImagesComponent, cmImages)
	}
	for _, r := range items {
		p, err := cl.Repo.Provider(r.Name, r.Type)
		if err != nil {
			return nil, err
		}
		imgs, err := cl.Repo.ComponentImages(ctx, p, repository.ComponentsOptions{Version: r.Version, TargetNamespace: opts.TargetNamespace})
		if err != nil {
			return nil, err
		}
		add(p.ManifestLabel(), imgs)
	}
	for i := range set {
		out.Images = append(out.Images, i)
	}
	sort.Strings(out.Images)
	return out, nil
}
