// Package mirror is `capctl repository mirror`: provider versions and cert-manager copied into a
// local repository or published to an OCI registry, and with --images the images they run copied
// to that registry, with the clusterctl.yaml fragment that points at all of it.
package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

// Request is one mirror run.
type Request struct {
	// To is the local repository folder, or oci://HOST/PROJECT.
	To string
	// Providers to mirror, by label with an optional version ("" or "latest": the newest).
	Providers   []provider.LabelReference
	CertManager bool
	Pre         bool
	// Layout of OCI artifacts (repository.Layouts; "" is the archive layout).
	Layout string
	// Images also copies every image the mirrored providers and cert-manager run to the OCI
	// target, and adds the images: override that makes them pulled from there.
	Images bool
}

// Validate checks the request alone, naming the flags.
func (r Request) Validate() error {
	if err := repository.CheckMirrorDir(r.To); err != nil {
		return err
	}
	if err := repository.CheckMirrorLayout(r.To, r.Layout); err != nil {
		return err
	}
	if r.Images && !repository.IsOCI(r.To) {
		return fmt.Errorf("--images copies images to a registry: it needs --to oci://HOST/PROJECT (--to %s is a folder)", r.To)
	}
	if len(r.Providers) == 0 {
		return errors.New("no provider to mirror")
	}
	return nil
}

// Result is what was mirrored, and the images copied with --images.
type Result struct {
	*repository.MirrorResult
	Images *repository.ImageCopyResult `json:"images,omitempty"`
}

// Run mirrors the providers, then with Images copies their images.
func Run(ctx context.Context, e env.Env, req Request) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	repo, err := e.Repositories(ctx)
	if err != nil {
		return nil, err
	}
	var reqs []repository.MirrorRequest
	for _, r := range req.Providers {
		p, err := repo.Provider(r.Name, r.Type)
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, repository.MirrorRequest{Provider: p, Version: r.Version})
	}
	mr, err := repo.Mirror(ctx, req.To, reqs, repository.MirrorOptions{
		CertManager: req.CertManager, Pre: req.Pre, Layout: req.Layout,
		Progress: func(what string) { e.Stepf("Mirroring %s", what) },
	})
	if err != nil {
		return nil, err
	}
	res := &Result{MirrorResult: mr}
	if !req.Images {
		return res, nil
	}
	images, err := imagesOf(ctx, repo, reqs, mr)
	if err != nil {
		return res, err
	}
	e.Stepf("Copying %d images to %s", len(images), req.To)
	res.Images, err = repo.CopyImages(ctx, req.To, images, func(what string) { e.Stepf("Copying %s", what) })
	return res, err
}

// imagesOf lists the images the mirrored versions run (after the configuration's images:
// overrides, as init would run them), sorted and without duplicates.
func imagesOf(ctx context.Context, repo *repository.Client, reqs []repository.MirrorRequest, mr *repository.MirrorResult) ([]string, error) {
	var out []string
	for i, m := range mr.Providers {
		imgs, err := repo.ComponentImages(ctx, reqs[i].Provider, repository.ComponentsOptions{Version: m.Version})
		if err != nil {
			return nil, err
		}
		out = append(out, imgs...)
	}
	if mr.CertManager != nil {
		cm, err := certmanager.Fetch(ctx, repo, mr.CertManager.Version)
		if err != nil {
			return nil, err
		}
		out = append(out, cm.Images...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Render prints the clusterctl.yaml fragment with comments (text), or the result as data.
func (r *Result) Render(w io.Writer, f output.Format) error {
	if r.Images == nil {
		return r.MirrorResult.Render(w, f)
	}
	return output.Render(w, f, r, func(out io.Writer) error {
		fmt.Fprintf(out, "# Images copied to %s:\n", r.Images.Repository)
		for _, i := range r.Images.Images {
			state := "copied"
			if i.Unchanged {
				state = "already there"
			}
			fmt.Fprintf(out, "#   %s -> %s@%s (%s)\n", i.From, i.To, i.Digest, state)
		}
		if err := r.MirrorResult.Render(out, output.Text); err != nil {
			return err
		}
		_, err := fmt.Fprint(out, r.Images.Config)
		return err
	})
}
