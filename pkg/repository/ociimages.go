package repository

// Copying the providers' container images to an OCI registry (`repository mirror --images`), so an
// air-gapped site pulls them from its own registry: go-containerregistry copies images and image
// indexes (every platform) blob by blob, as crane does, with the credentials of the Docker
// credential store (the same as the provider artifacts') and the same TLS and plain-HTTP rules.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"oras.land/oras-go/v2/registry/remote/auth"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/pkg/config"
)

// CopiedImage is one image copied by CopyImages.
type CopiedImage struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Digest string `json:"digest"`
	// Unchanged: the target already held this digest under that tag.
	Unchanged bool `json:"unchanged,omitempty"`
}

// ImageCopyResult is what CopyImages copied and the `images:` override that makes every
// component pull from the target.
type ImageCopyResult struct {
	// Repository is the target, HOST/PROJECT: every image is copied to HOST/PROJECT/NAME:TAG.
	Repository string        `json:"repository"`
	Images     []CopiedImage `json:"images"`
	// Config is the clusterctl.yaml fragment (images: all: repository: HOST/PROJECT).
	Config string `json:"config"`
}

// CopyImages copies each image to HOST/PROJECT/NAME:TAG of to (oci://HOST/PROJECT), keeping its
// digest (image indexes with every platform). Two images of the same name and tag from different
// repositories cannot share a target and are refused before anything is copied.
func (c *Client) CopyImages(ctx context.Context, to string, images []string, progress func(string)) (*ImageCopyResult, error) {
	target, err := parseOCITarget(to)
	if err != nil {
		return nil, err
	}
	res := &ImageCopyResult{Repository: target.host + "/" + target.project}
	targets := map[string]string{} // target -> source
	var plan []CopiedImage
	for _, img := range images {
		ref := parseImage(img)
		dst := (imageRef{repository: res.Repository, name: ref.name, tag: ref.tag}).apply(config.ImageOverride{})
		if ref.tag == "" {
			dst += "@" + ref.digest // copied by digest: the target names it the same way
		}
		if prev, ok := targets[dst]; ok && prev != img {
			return nil, fmt.Errorf("%s and %s would both be copied to %s: one images: override cannot serve both; mirror them into different projects", prev, img, dst)
		}
		if _, ok := targets[dst]; ok {
			continue
		}
		targets[dst] = img
		plan = append(plan, CopiedImage{From: img, To: dst})
	}
	sort.Slice(plan, func(i, j int) bool { return plan[i].To < plan[j].To })
	tr, err := c.ociTransport(ctx)
	if err != nil {
		return nil, err
	}
	kc := credentialKeychain{c: c, ctx: ctx}
	for i := range plan {
		if progress != nil {
			progress(fmt.Sprintf("%s → %s (%d of %d)", plan[i].From, plan[i].To, i+1, len(plan)))
		}
		if err := c.copyImage(ctx, &plan[i], tr, kc); err != nil {
			return res, err
		}
		res.Images = append(res.Images, plan[i])
	}
	b, _ := yaml.Marshal(map[string]any{"images": map[string]any{"all": map[string]string{"repository": res.Repository}}})
	res.Config = string(b)
	return res, nil
}

func (c *Client) copyImage(ctx context.Context, ci *CopiedImage, tr http.RoundTripper, kc authn.Keychain) error {
	src, err := c.imageReference(ctx, ci.From)
	if err != nil {
		return err
	}
	dst, err := c.imageReference(ctx, ci.To)
	if err != nil {
		return err
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(tr), remote.WithAuthFromKeychain(kc)}
	desc, err := remote.Get(src, opts...)
	if err != nil {
		return imageError("reading "+ci.From, err)
	}
	ci.Digest = desc.Digest.String()
	if have, err := remote.Head(dst, opts...); err == nil && have.Digest == desc.Digest {
		ci.Unchanged = true
		return nil
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return imageError("reading "+ci.From, err)
		}
		if err := remote.WriteIndex(dst, idx, opts...); err != nil {
			return imageError("copying "+ci.From+" to "+ci.To, err)
		}
		return nil
	}
	img, err := desc.Image()
	if err != nil {
		return imageError("reading "+ci.From, err)
	}
	if err := remote.Write(dst, img, opts...); err != nil {
		return imageError("copying "+ci.From+" to "+ci.To, err)
	}
	return nil
}

// imageReference parses an image reference, over plain HTTP only for a listed registry with no
// credential (registryAccess).
func (c *Client) imageReference(ctx context.Context, s string) (name.Reference, error) {
	ref, err := name.ParseReference(s)
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", s, err)
	}
	plain, _, err := c.registryAccess(ctx, ref.Context().RegistryStr())
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s, err)
	}
	if plain {
		return name.ParseReference(s, name.Insecure)
	}
	return ref, nil
}

// imageError names what failed and the fix for the answers a registry gives.
func imageError(what string, err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("%s: the registry refused access (401 Unauthorized): log in with `docker login` (capctl reads Docker's credential store and helpers)", what)
		case http.StatusForbidden:
			return fmt.Errorf("%s: the registry forbids it (403 Forbidden): the credentials are not allowed this repository", what)
		case http.StatusTooManyRequests:
			return fmt.Errorf("%s: the registry is rate-limiting (429 Too Many Requests): try again later", what)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// credentialKeychain gives go-containerregistry the credentials the provider artifacts use (one
// credential store for both; never printed).
type credentialKeychain struct {
	c   *Client
	ctx context.Context
}

func (k credentialKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	plain, cred, err := k.c.registryAccess(k.ctx, r.RegistryStr())
	if err != nil {
		return nil, err
	}
	if plain || cred == nil {
		return authn.Anonymous, nil
	}
	got, err := cred(k.ctx, r.RegistryStr())
	if err != nil {
		return nil, fmt.Errorf("reading the credential of %s: %w", r.RegistryStr(), err)
	}
	if got == auth.EmptyCredential {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(authn.AuthConfig{Username: got.Username, Password: got.Password, IdentityToken: got.RefreshToken, RegistryToken: got.AccessToken}), nil
}
