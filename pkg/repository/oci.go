package repository

// OCI provider repositories: oci://HOST[:PORT]/PATH/NAME[:TAG|@sha256:DIGEST]. One artifact per
// provider version, tagged with the version. Two layouts are read:
//   - one application/vnd.oci.image.layer.v1.tar+gzip layer holding metadata.yaml,
//     {type}-components.yaml and the release's other files, with the provider named in the
//     manifest's annotations (the layout `repository mirror --to oci://` publishes by default);
//   - one layer per file, each named by its org.opencontainers.image.title annotation (the layout
//     the Cluster API Operator reads and its publisher pushes): metadata.yaml or
//     {type}-{name}-{version}-metadata.yaml, and {type}-components.yaml, components.yaml or
//     {type}-{name}-{version}-components.yaml.
// oras-go does the registry protocol (tags, manifests, blobs, token auth), verifies every blob
// against its digest, and reads Docker's credential store and helpers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"

	capdigest "github.com/capctl/capctl/internal/digest"
	"github.com/capctl/capctl/internal/targz"
	"github.com/capctl/capctl/internal/userinput"
)

// Annotations of a provider artifact (besides the OCI ones: title, version, source).
const (
	OCIAnnotationProviderType = "cluster-api.sigs.k8s.io/provider-type"
	OCIAnnotationProviderName = "cluster-api.sigs.k8s.io/provider-name"
)

// Media types of provider artifacts.
const (
	// OCIArtifactType is the manifest's artifactType capctl publishes with (the config is the empty
	// descriptor); reading does not require it.
	OCIArtifactType = "application/vnd.cluster-api.provider-manifests.v1"
	// ociFileLayer is the media type of a one-file layer: what oras-go's file store (and so the
	// operator's publisher) gives a file pushed without a media type.
	ociFileLayer = "application/vnd.oci.image.layer.v1.tar"
)

// ociFileMediaTypes are the layer media types read as one file named by its title.
var ociFileMediaTypes = map[string]bool{
	ociFileLayer:               true,
	"application/yaml":         true,
	"application/x-yaml":       true,
	"text/yaml":                true,
	"text/plain":               true,
	"application/octet-stream": true,
}

// maxOCIManifest bounds a manifest: a provider artifact's is a few kilobytes; 4 MiB is the bound
// registries themselves put on manifests.
const maxOCIManifest = 4 << 20

// IsOCI reports whether raw is an oci:// reference.
func IsOCI(raw string) bool { return strings.HasPrefix(strings.ToLower(raw), "oci://") }

// parseOCI parses oci://HOST[:PORT]/PATH/NAME[:TAG|@sha256:DIGEST]. Without a tag the versions
// are the repository's semver tags; a tag names one version; a digest pins one artifact, whose
// version is its org.opencontainers.image.version annotation.
func parseOCI(u *url.URL, raw string) (*location, error) {
	if u.User != nil {
		return nil, fmt.Errorf("repository URL %q: credentials are never taken from a URL; log in with `docker login %s` (capctl reads Docker's credential store)", u.Redacted(), u.Host)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("repository URL %q: an OCI reference has no query or fragment: oci://HOST/PATH/NAME[:TAG|@sha256:DIGEST]", raw)
	}
	ref, err := registry.ParseReference(u.Host + u.Path)
	if err != nil || ref.Repository == "" {
		return nil, fmt.Errorf("repository URL %q: not an OCI reference (oci://HOST/PATH/NAME[:TAG|@sha256:DIGEST]): %v", raw, err)
	}
	l := &location{kind: "oci", host: ref.Registry, repoPath: ref.Repository, version: "latest"}
	switch {
	case ref.Reference == "":
	case strings.Contains(ref.Reference, ":"):
		if _, err := ref.Digest(); err != nil {
			return nil, fmt.Errorf("repository URL %q: %v", raw, err)
		}
		l.digest = ref.Reference
	case ref.Reference == "latest":
		return nil, fmt.Errorf("repository URL %q: provider artifacts are tagged with their version, never `latest`: leave the tag out to use the newest version", raw)
	default:
		l.version = ref.Reference
	}
	return l, nil
}

// ociComponentsFile is the components file of a provider read from OCI: the type's file
// (infrastructure-components.yaml); cert-manager's is cert-manager.yaml.
func ociComponentsFile(p Provider) string {
	if p.Type.Valid() {
		return p.Type.ComponentsFile()
	}
	return p.Name + ".yaml"
}

// ociArtifactName is the repository name of a provider's artifacts: {type}-{name}
// (core-cluster-api, infrastructure-docker); cert-manager's is cert-manager.
func ociArtifactName(p Provider) string {
	if t := p.Type.Short(); t != "" {
		return t + "-" + p.Name
	}
	return p.Name
}

// ociSource is an OCI repository of one provider. It caches what it reads itself, keyed by the
// manifest's digest (a tag may move; a digest cannot), so cacheKey is "".
type ociSource struct {
	p       Provider
	host    string
	repoRef string // host/path/name
	digest  string // pinned digest, "" for none
	repo    *remote.Repository
	cache   *diskCache
	offline bool

	mu   sync.Mutex
	arts map[string]*ociArtifact // by tag or digest
}

// ociArtifact is one provider version read from a registry.
type ociArtifact struct {
	ref         string // host/path/name:tag or @digest, for messages
	digest      string
	annotations map[string]string
	files       map[string][]byte
}

func (s *ociSource) String() string   { return "OCI repository " + s.repoRef }
func (s *ociSource) cacheKey() string { return "" }

func (s *ociSource) reference(version string) string {
	if s.digest != "" {
		return s.repoRef + "@" + s.digest
	}
	return s.repoRef + ":" + version
}

func (s *ociSource) fileURL(version, file string) string {
	return "oci://" + s.reference(version) + " (" + file + ")"
}

func (s *ociSource) versions(ctx context.Context) ([]string, error) {
	if s.digest != "" {
		a, err := s.artifact(ctx, "")
		if err != nil {
			return nil, err
		}
		v := a.annotations[ocispec.AnnotationVersion]
		if v == "" {
			return nil, fmt.Errorf("OCI artifact %s has no %s annotation, so a digest cannot name its version: pin it by tag (oci://%s:vX.Y.Z)", a.ref, ocispec.AnnotationVersion, s.repoRef)
		}
		return []string{v}, nil
	}
	if s.offline {
		return nil, offlineError(fmt.Sprintf("listing the tags of %s", s.repoRef))
	}
	var out []string
	err := s.repo.Tags(ctx, "", func(tags []string) error {
		out = append(out, tags...)
		return nil
	})
	if err != nil {
		return nil, ociError("listing the tags of "+s.repoRef, s.host, err)
	}
	return out, nil
}

func (s *ociSource) getFile(ctx context.Context, version, file string) ([]byte, error) {
	a, err := s.artifact(ctx, version)
	if err != nil {
		return nil, err
	}
	for _, name := range s.fileNames(version, file) {
		if b, ok := a.files[name]; ok {
			return b, nil
		}
	}
	return nil, fmt.Errorf("OCI artifact %s has no %s (it holds %s): %w", a.ref, strings.Join(s.fileNames(version, file), " or "), strings.Join(slices.Sorted(maps.Keys(a.files)), ", "), ErrNotFound)
}

// fileNames are the names file may have in an artifact, in the order they are looked for.
func (s *ociSource) fileNames(version, file string) []string {
	full := fmt.Sprintf("%s-%s-%s", s.p.Type.Short(), s.p.Name, version)
	switch file {
	case MetadataFile:
		return []string{MetadataFile, full + "-metadata.yaml"}
	case ociComponentsFile(s.p):
		return []string{file, "components.yaml", full + "-components.yaml"}
	}
	return []string{file}
}

func (s *ociSource) listFiles(ctx context.Context, version string) ([]string, error) {
	a, err := s.artifact(ctx, version)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(a.files)), nil
}

// Artifact names the OCI artifact version of p is read from, by digest
// (HOST/PATH/NAME@sha256:...), read once per run; "" when p's repository is not an OCI registry.
func (c *Client) Artifact(ctx context.Context, p Provider, version string) (string, error) {
	s, _, err := c.source(p)
	if err != nil {
		return "", err
	}
	o, ok := s.(*ociSource)
	if !ok {
		return "", nil
	}
	d, err := o.Digest(ctx, version)
	if err != nil {
		return "", err
	}
	return o.repoRef + "@" + d, nil
}

// Digest is the manifest digest of version, read once per run.
func (s *ociSource) Digest(ctx context.Context, version string) (string, error) {
	a, err := s.artifact(ctx, version)
	if err != nil {
		return "", err
	}
	return a.digest, nil
}

// artifact reads version's artifact once per run: the manifest from the registry (a tag is
// resolved every run, so a moved tag is seen), the files from the cache by digest or else from the
// registry, every annotation checked against the provider asked for.
func (s *ociSource) artifact(ctx context.Context, version string) (*ociArtifact, error) {
	ref := version
	if s.digest != "" {
		ref = s.digest
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.arts[ref]; ok {
		return a, s.checkVersion(a, version)
	}
	a, err := s.load(ctx, ref)
	if err != nil {
		return nil, err
	}
	if s.arts == nil {
		s.arts = map[string]*ociArtifact{}
	}
	s.arts[ref] = a
	return a, s.checkVersion(a, version)
}

// checkVersion refuses an artifact whose version annotation is not the version asked for.
func (s *ociSource) checkVersion(a *ociArtifact, version string) error {
	got := a.annotations[ocispec.AnnotationVersion]
	if version == "" || got == "" || got == version {
		return nil
	}
	if s.digest != "" {
		return fmt.Errorf("the provider URL pins %s, which is version %s, not %s: %w", a.ref, got, version, ErrNotFound)
	}
	return fmt.Errorf("OCI artifact %s carries the annotation %s=%s: a tag and the artifact's version must agree (publish it again under its own version)", a.ref, ocispec.AnnotationVersion, got)
}

func (s *ociSource) load(ctx context.Context, ref string) (*ociArtifact, error) {
	display := s.repoRef + ":" + ref
	if strings.Contains(ref, ":") {
		display = s.repoRef + "@" + ref
	}
	var raw []byte
	dgst := ""
	if s.digest != "" {
		if b, ok := s.cachedManifest(s.digest); ok {
			raw, dgst = b, s.digest
		}
	}
	if raw == nil {
		if s.offline {
			return nil, offlineError(fmt.Sprintf("the OCI artifact %s (pin it by digest once online to read it offline from the cache)", display))
		}
		desc, rc, err := s.repo.FetchReference(ctx, ref)
		if err != nil {
			return nil, ociError("OCI artifact "+display, s.host, err)
		}
		defer rc.Close()
		if err := checkManifestDescriptor(display, desc); err != nil {
			return nil, err
		}
		if raw, err = content.ReadAll(rc, desc); err != nil {
			return nil, fmt.Errorf("OCI artifact %s: reading its manifest: %w", display, err)
		}
		dgst = desc.Digest.String()
		if s.digest != "" && dgst != s.digest {
			return nil, fmt.Errorf("OCI artifact %s: the registry answered with manifest %s", display, dgst)
		}
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("OCI artifact %s: its manifest is not an OCI image manifest: %w", display, err)
	}
	if m.MediaType != "" && m.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fmt.Errorf("OCI artifact %s: unknown manifest media type %q: a provider artifact is an OCI image manifest (%s)", display, m.MediaType, ocispec.MediaTypeImageManifest)
	}
	a := &ociArtifact{ref: display, digest: dgst, annotations: m.Annotations}
	if err := s.checkAnnotations(a, m); err != nil {
		return nil, err
	}
	if files, ok := s.cachedFiles(dgst); ok {
		a.files = files
		return a, nil
	}
	if s.offline {
		return nil, offlineError(fmt.Sprintf("the files of OCI artifact %s (not in the cache %s)", display, s.cache.dirOrDisabled()))
	}
	files, err := s.fetchLayers(ctx, display, m)
	if err != nil {
		return nil, err
	}
	a.files = files
	s.cacheArtifact(dgst, raw, files)
	return a, nil
}

// checkManifestDescriptor refuses what is not a provider artifact before its body is read.
func checkManifestDescriptor(display string, desc ocispec.Descriptor) error {
	if desc.Size > maxOCIManifest {
		return &userinput.TooLargeError{Name: "the manifest of OCI artifact " + display, Limit: maxOCIManifest, Flag: "(a fixed bound: no provider artifact's manifest is that large)"}
	}
	switch desc.MediaType {
	case ocispec.MediaTypeImageManifest:
		return nil
	case ocispec.MediaTypeImageIndex, "application/vnd.docker.distribution.manifest.list.v2+json":
		return fmt.Errorf("OCI artifact %s is an image index (several platforms), not a provider artifact: point the provider URL at a provider's manifests", display)
	}
	if strings.HasPrefix(desc.MediaType, "text/html") {
		return fmt.Errorf("OCI artifact %s: %w", display, &htmlError{file: "the manifest"})
	}
	return fmt.Errorf("OCI artifact %s: unknown media type %q: a provider artifact is an OCI image manifest (%s)", display, desc.MediaType, ocispec.MediaTypeImageManifest)
}

// checkAnnotations refuses an artifact published for another provider, and an artifact in the
// single-archive layout without the annotations that layout requires.
func (s *ociSource) checkAnnotations(a *ociArtifact, m ocispec.Manifest) error {
	ann := m.Annotations
	wantType, wantName := s.p.Type.Short(), s.p.Name
	for _, c := range []struct{ key, want string }{{OCIAnnotationProviderType, wantType}, {OCIAnnotationProviderName, wantName}} {
		if got := ann[c.key]; got != "" && c.want != "" && got != c.want {
			return fmt.Errorf("OCI artifact %s carries %s=%s, but %s was asked for: the provider URL points at another provider's artifacts (fix the url of %s in the configuration)",
				a.ref, c.key, got, s.p, s.p.ManifestLabel())
		}
	}
	archive := false
	for _, l := range m.Layers {
		if l.MediaType == ocispec.MediaTypeImageLayerGzip {
			archive = true
		}
	}
	if !archive {
		return nil // the one-layer-per-file layout: the annotations are optional
	}
	required := []string{ocispec.AnnotationTitle, ocispec.AnnotationVersion, ocispec.AnnotationSource, OCIAnnotationProviderName}
	if wantType != "" {
		required = append(required, OCIAnnotationProviderType)
	}
	for _, k := range required {
		if ann[k] == "" {
			return fmt.Errorf("OCI artifact %s has no %s annotation, which an archive-layout provider artifact must carry: publish it with `capctl repository mirror --to oci://...` or add the annotation", a.ref, k)
		}
	}
	return nil
}

// fetchLayers reads every layer (each verified against its digest by oras-go) into files: an
// archive layer's regular files, or one file named by the layer's title.
func (s *ociSource) fetchLayers(ctx context.Context, display string, m ocispec.Manifest) (map[string][]byte, error) {
	limit := userinput.Max()
	var total, archived int64 // bytes of the layers, and of the files unpacked from archives
	files := map[string][]byte{}
	add := func(name string, b []byte) error {
		if err := checkArtifactFileName(name); err != nil {
			return fmt.Errorf("OCI artifact %s: %w", display, err)
		}
		if _, dup := files[name]; dup {
			return fmt.Errorf("OCI artifact %s holds %s twice", display, name)
		}
		files[name] = b
		return nil
	}
	if len(m.Layers) == 0 {
		return nil, fmt.Errorf("OCI artifact %s has no layers: it holds no files", display)
	}
	for _, l := range m.Layers {
		if l.Size < 0 || l.Size > limit || total+l.Size > limit {
			return nil, &userinput.TooLargeError{Name: fmt.Sprintf("OCI artifact %s (layer %s, %d bytes)", display, l.Digest, l.Size), Limit: limit, Flag: userinput.Flag}
		}
		total += l.Size
		isArchive := l.MediaType == ocispec.MediaTypeImageLayerGzip
		title := l.Annotations[ocispec.AnnotationTitle]
		switch {
		case isArchive:
		case ociFileMediaTypes[l.MediaType] && title != "":
		case ociFileMediaTypes[l.MediaType]:
			return nil, fmt.Errorf("OCI artifact %s: layer %s has no %s annotation, so its file has no name", display, l.Digest, ocispec.AnnotationTitle)
		default:
			return nil, fmt.Errorf("OCI artifact %s: layer %s has the unknown media type %q: a provider artifact's layers are %s archives or files (%s)",
				display, l.Digest, l.MediaType, ocispec.MediaTypeImageLayerGzip, strings.Join(slices.Sorted(maps.Keys(ociFileMediaTypes)), ", "))
		}
		rc, err := s.repo.Fetch(ctx, l)
		if err != nil {
			return nil, ociError(fmt.Sprintf("OCI artifact %s: layer %s", display, l.Digest), s.host, err)
		}
		b, err := content.ReadAll(rc, l)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("OCI artifact %s: layer %s: %w", display, l.Digest, err)
		}
		if !isArchive {
			if err := add(title, b); err != nil {
				return nil, err
			}
			continue
		}
		if err := targz.Read(ctx, bytes.NewReader(b), "layer "+l.Digest.String(), limit-archived, func(name string, data []byte) error {
			archived += int64(len(data))
			return add(name, data)
		}); err != nil {
			return nil, fmt.Errorf("OCI artifact %s: layer %s: %w", display, l.Digest, err)
		}
	}
	for name, b := range files {
		if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
			if err := validateFile(name, b); err != nil {
				return nil, fmt.Errorf("OCI artifact %s: %w; nothing was cached", display, err)
			}
		}
	}
	return files, nil
}

// checkArtifactFileName accepts the plain file names a release has (no folders, no escapes).
func checkArtifactFileName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("file name %q is not a plain file name", name)
	}
	return nil
}

// The cache of an artifact: {cache}/files/oci/{host}/{path}/{digest}/ holds its files (each with
// its checksum beside it) and {digest}.manifest/ the manifest and the list of files, written last,
// so a manifest in the cache means every file was cached.
func (s *ociSource) cacheKeyOf() string { return path.Join("oci", s.repoRef) }

func digestFolder(dgst string) string { return strings.Replace(dgst, ":", "-", 1) }

func (s *ociSource) cachedManifest(dgst string) ([]byte, bool) {
	b, _, bad, ok := s.cache.getFile(s.cacheKeyOf(), digestFolder(dgst)+".manifest", "manifest.json")
	if !ok || bad != nil {
		return nil, false
	}
	if capdigest.Bytes(b) != dgst {
		return nil, false
	}
	return b, true
}

func (s *ociSource) cachedFiles(dgst string) (map[string][]byte, bool) {
	if _, ok := s.cachedManifest(dgst); !ok {
		return nil, false
	}
	list, _, bad, ok := s.cache.getFile(s.cacheKeyOf(), digestFolder(dgst)+".manifest", "files.json")
	var names []string
	if !ok || bad != nil || json.Unmarshal(list, &names) != nil || len(names) == 0 {
		return nil, false
	}
	files := map[string][]byte{}
	for _, n := range names {
		b, _, bad, ok := s.cache.getFile(s.cacheKeyOf(), digestFolder(dgst), n)
		if !ok || bad != nil {
			return nil, false
		}
		files[n] = b
	}
	return files, true
}

func (s *ociSource) cacheArtifact(dgst string, manifest []byte, files map[string][]byte) {
	key, dir := s.cacheKeyOf(), digestFolder(dgst)
	names := slices.Sorted(maps.Keys(files))
	for _, n := range names {
		if err := s.cache.putFile(key, dir, n, files[n]); err != nil {
			return
		}
	}
	list, _ := json.Marshal(names)
	if s.cache.putFile(key, dir+".manifest", "files.json", list) != nil {
		return
	}
	_ = s.cache.putFile(key, dir+".manifest", "manifest.json", manifest)
}

func (c *diskCache) dirOrDisabled() string {
	if c == nil {
		return "(disabled)"
	}
	return c.dir
}

// ociError names what failed and what to do about the registry's answer.
func ociError(what, host string, err error) error {
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		switch er.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		case http.StatusUnauthorized:
			return fmt.Errorf("%s: the registry %s refused access (401 Unauthorized): log in with `docker login %s` (capctl reads Docker's credential store and helpers) and check the credentials", what, host, host)
		case http.StatusForbidden:
			return fmt.Errorf("%s: the registry %s forbids it (403 Forbidden): the credentials for %s are not allowed to read this repository", what, host, host)
		case http.StatusTooManyRequests:
			return fmt.Errorf("%s: the registry %s is rate-limiting (429 Too Many Requests): try again later, or mirror the providers into your own registry (`capctl repository mirror --to oci://...`)", what, host)
		}
		return fmt.Errorf("%s: the registry %s answered %d: %w", what, host, er.StatusCode, err)
	}
	if errors.Is(err, errdef.ErrNotFound) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return fmt.Errorf("%s: the registry %s asks for a credential and none is configured for it: log in with `docker login %s` (capctl reads Docker's credential store: DOCKER_CONFIG or ~/.docker/config.json)", what, host, host)
	}
	return fmt.Errorf("%s: %w", what, err)
}
