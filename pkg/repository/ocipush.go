package repository

// Publishing provider versions to an OCI registry (`repository mirror --to oci://HOST/PROJECT`):
// one artifact per provider version at HOST/PROJECT/manifests/{type}-{name}:{version}.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/capctl/capctl/internal/targz"
)

// Layouts of a published artifact.
const (
	// LayoutArchive is one tar+gzip layer holding every file, the provider named in the manifest's
	// annotations (the default).
	LayoutArchive = "archive"
	// LayoutOperator is one layer per file, named by its title (what the Cluster API Operator reads).
	LayoutOperator = "operator"
)

// Layouts lists the accepted --layout values.
var Layouts = []string{LayoutArchive, LayoutOperator}

// ociTarget is a parsed `--to oci://HOST/PROJECT`.
type ociTarget struct{ host, project string }

// parseOCITarget parses oci://HOST[:PORT]/PROJECT (no tag, no digest: each artifact gets its own).
func parseOCITarget(raw string) (ociTarget, error) {
	u, err := url.Parse(raw)
	if err != nil || !strings.EqualFold(u.Scheme, "oci") || u.Host == "" {
		return ociTarget{}, fmt.Errorf("--to %s: an OCI target is oci://HOST[:PORT]/PROJECT", raw)
	}
	if u.User != nil {
		return ociTarget{}, fmt.Errorf("--to %s: credentials are never taken from a URL; log in with `docker login %s`", u.Redacted(), u.Host)
	}
	project := strings.Trim(u.Path, "/")
	if project == "" || strings.ContainsAny(project, ":@") || u.RawQuery != "" || u.Fragment != "" {
		return ociTarget{}, fmt.Errorf("--to %s: name a project without a tag or digest: oci://HOST[:PORT]/PROJECT (artifacts go to PROJECT/manifests/{type}-{name}:{version})", raw)
	}
	if _, err := registry.ParseReference(u.Host + "/" + project + "/manifests/core-cluster-api"); err != nil {
		return ociTarget{}, fmt.Errorf("--to %s: %q is not a valid repository path (lower-case letters, digits, separators): %v", raw, project, err)
	}
	return ociTarget{host: u.Host, project: project}, nil
}

// providerURL is the provider URL of p's artifacts under the target (versions from its tags).
func (t ociTarget) providerURL(p Provider) string {
	return fmt.Sprintf("oci://%s/%s/manifests/%s", t.host, t.project, ociArtifactName(p))
}

// publish pushes one provider version. Re-publishing the same files gives the same digest and
// changes nothing; a version tag that already names other content is not moved (clusters
// installed from it are pinned to its digest).
func (c *Client) publish(ctx context.Context, t ociTarget, p Provider, version string, files []string, layout string) (*MirroredVersion, error) {
	dst := Provider{Name: p.Name, Type: p.Type, URL: t.providerURL(p)}
	content, err := c.readMirrored(ctx, p, version, files)
	if err != nil {
		return nil, err
	}
	if b, ok := content[p.ComponentsFile()]; ok && p.ComponentsFile() != ociComponentsFile(p) {
		// docker's development components are published as its type's file.
		delete(content, p.ComponentsFile())
		content[ociComponentsFile(p)] = b
	}
	ann := map[string]string{
		ocispec.AnnotationTitle:   ociArtifactName(p),
		ocispec.AnnotationVersion: version,
		ocispec.AnnotationSource:  p.RepositoryURL(),
		OCIAnnotationProviderName: p.Name,
	}
	if t := p.Type.Short(); t != "" {
		ann[OCIAnnotationProviderType] = t
	}
	blobs, manifest, err := packArtifact(content, ann, layout)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", p, version, err)
	}
	loc, err := parseLocation(dst.URL)
	if err != nil {
		return nil, err
	}
	src, err := c.ociSource(dst, loc)
	if err != nil {
		return nil, err
	}
	ref := src.repoRef + ":" + version
	dgst := digest.FromBytes(manifest).String()
	mv := &MirroredVersion{Name: p.Name, Type: p.Type, Version: version, Dir: ref, URL: dst.URL, Digest: dgst, Files: slices.Sorted(maps.Keys(content))}
	old, err := src.repo.Resolve(ctx, version)
	switch {
	case err == nil && old.Digest.String() == dgst:
		mv.Unchanged = true
		return mv, nil
	case err == nil:
		return nil, fmt.Errorf("%s already names %s, other content than this %s %s (%s): a published version's tag is never moved, since clusters installed from it are pinned to its digest; delete the tag in the registry or publish to another project",
			ref, old.Digest, p, version, dgst)
	case !errors.Is(err, errdef.ErrNotFound):
		return nil, ociError("resolving "+ref, t.host, err)
	}
	for _, b := range blobs {
		if err := pushBlob(ctx, src.repo, b); err != nil {
			return nil, ociError(fmt.Sprintf("pushing a blob of %s", ref), t.host, err)
		}
	}
	if _, err := oras.TagBytes(ctx, src.repo, ocispec.MediaTypeImageManifest, manifest, version); err != nil {
		return nil, ociError("pushing the manifest of "+ref, t.host, err)
	}
	return mv, nil
}

type blob struct {
	desc ocispec.Descriptor
	data []byte
}

func pushBlob(ctx context.Context, repo *remote.Repository, b blob) error {
	ok, err := repo.Exists(ctx, b.desc)
	if err != nil || ok {
		return err
	}
	err = repo.Push(ctx, b.desc, bytes.NewReader(b.data))
	if errors.Is(err, errdef.ErrAlreadyExists) {
		return nil
	}
	return err
}

// packArtifact builds the blobs and the manifest of one artifact. Everything is deterministic
// (sorted files, zero times, no creation annotation), so the same files give the same digest.
func packArtifact(files map[string][]byte, ann map[string]string, layout string) ([]blob, []byte, error) {
	config := blob{desc: ocispec.DescriptorEmptyJSON, data: ocispec.DescriptorEmptyJSON.Data}
	config.desc.Data = nil
	blobs := []blob{config}
	var layers []ocispec.Descriptor
	switch layout {
	case LayoutArchive:
		b, err := tarGzip(files)
		if err != nil {
			return nil, nil, err
		}
		d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(b), Size: int64(len(b))}
		blobs = append(blobs, blob{d, b})
		layers = append(layers, d)
	case LayoutOperator:
		for _, name := range slices.Sorted(maps.Keys(files)) {
			b := files[name]
			d := ocispec.Descriptor{MediaType: ociFileLayer, Digest: digest.FromBytes(b), Size: int64(len(b)),
				Annotations: map[string]string{ocispec.AnnotationTitle: name}}
			blobs = append(blobs, blob{d, b})
			layers = append(layers, d)
		}
	}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: OCIArtifactType,
		Config:       config.desc,
		Layers:       layers,
		Annotations:  ann,
	}
	raw, err := json.Marshal(m)
	return blobs, raw, err
}

// tarGzip archives files flat, in name order, with zero times and fixed modes.
func tarGzip(files map[string][]byte) ([]byte, error) {
	var entries []targz.File
	for _, name := range slices.Sorted(maps.Keys(files)) {
		entries = append(entries, targz.File{Name: name, Data: files[name]})
	}
	return targz.Write(entries, 0o644, time.Unix(0, 0).UTC(), gzip.BestCompression)
}
