package repository

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/file"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/provider"
)

// testRegistry is an in-memory registry (go-containerregistry's) behind TLS, with an optional
// handler in front of it to answer what a registry in trouble answers.
type testRegistry struct {
	srv   *httptest.Server
	host  string
	front atomic.Pointer[func(w http.ResponseWriter, r *http.Request) bool]
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	reg := &testRegistry{}
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	reg.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := reg.front.Load(); f != nil && (*f)(w, r) {
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(reg.srv.Close)
	reg.host = strings.TrimPrefix(reg.srv.URL, "https://")
	return reg
}

// answer makes the registry answer every request under /v2/ with status and body.
func (r *testRegistry) answer(status int, contentType, body string) {
	f := func(w http.ResponseWriter, req *http.Request) bool {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
		return true
	}
	r.front.Store(&f)
}

func (r *testRegistry) heal() { r.front.Store(nil) }

// options are a client's options that trust the registry's certificate.
func (r *testRegistry) options() Options {
	return Options{HTTPClient: r.srv.Client(), RetryAttempts: 1, OCICredentials: noCredentials}
}

func noCredentials(context.Context, string) (auth.Credential, error) {
	return auth.EmptyCredential, nil
}

// ociConfig points the four providers and cert-manager at oci://host/project.
func ociConfig(t *testing.T, host, project string, env map[string]string) *config.Config {
	t.Helper()
	u := func(name string) string { return "oci://" + host + "/" + project + "/manifests/" + name }
	return loadConfig(t, `providers:
- {name: cluster-api, type: CoreProvider, url: `+u("core-cluster-api")+`}
- {name: kubeadm, type: BootstrapProvider, url: `+u("bootstrap-kubeadm")+`}
- {name: kubeadm, type: ControlPlaneProvider, url: `+u("control-plane-kubeadm")+`}
- {name: docker, type: InfrastructureProvider, url: `+u("infrastructure-docker")+`}
cert-manager:
  url: `+u("cert-manager")+`
  version: v1.21.1
`, env)
}

var fixtureProviders = []struct {
	name string
	t    provider.Type
}{
	{"cluster-api", provider.CoreProviderType}, {"kubeadm", provider.BootstrapProviderType},
	{"kubeadm", provider.ControlPlaneProviderType}, {"docker", provider.InfrastructureProviderType},
}

// mirrorFixture publishes the fixture repository's latest providers to oci://host/project.
func mirrorFixture(t *testing.T, reg *testRegistry, project, layout string) *MirrorResult {
	t.Helper()
	src := newTestClient(t, fixtureConfig(t, ""), reg.options())
	var reqs []MirrorRequest
	for _, fp := range fixtureProviders {
		p, err := src.Provider(fp.name, fp.t)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, MirrorRequest{Provider: p})
	}
	res, err := src.Mirror(context.Background(), "oci://"+reg.host+"/"+project, reqs, MirrorOptions{CertManager: true, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func objectsDigest(t *testing.T, c *Components) string {
	t.Helper()
	var docs []string
	for _, o := range c.Objects {
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	sort.Strings(docs)
	s := sha256.Sum256([]byte(strings.Join(docs, "\n")))
	return hex.EncodeToString(s[:])
}

// Published in either layout, every provider read back from the registry gives exactly the
// objects the local repository gives; publishing again pushes nothing.
func TestOCIMirrorThenReadBothLayouts(t *testing.T) {
	reg := newTestRegistry(t)
	ctx := context.Background()
	local := newTestClient(t, fixtureConfig(t, ""), Options{Offline: true})
	for _, layout := range []string{LayoutArchive, LayoutOperator} {
		t.Run(layout, func(t *testing.T) {
			res := mirrorFixture(t, reg, layout, layout)
			if len(res.Providers) != 4 || res.CertManager == nil {
				t.Fatalf("mirrored %d providers, cert-manager %v", len(res.Providers), res.CertManager)
			}
			for _, m := range res.Providers {
				if m.Digest == "" || m.Unchanged || !strings.HasPrefix(m.URL, "oci://"+reg.host+"/"+layout+"/manifests/") {
					t.Errorf("%s: %+v", m.Name, m)
				}
			}
			if !strings.Contains(res.Config, "oci://"+reg.host+"/"+layout+"/manifests/infrastructure-docker") {
				t.Errorf("config fragment:\n%s", res.Config)
			}
			again := mirrorFixture(t, reg, layout, layout)
			for i, m := range again.Providers {
				if !m.Unchanged || m.Digest != res.Providers[i].Digest {
					t.Errorf("second mirror of %s: %+v, first digest %s", m.Name, m, res.Providers[i].Digest)
				}
			}

			oc := newTestClient(t, ociConfig(t, reg.host, layout, nil), reg.options())
			for _, fp := range fixtureProviders {
				lp, _ := local.Provider(fp.name, fp.t)
				op, _ := oc.Provider(fp.name, fp.t)
				want, err := local.Components(ctx, lp, ComponentsOptions{Version: "latest"})
				if err != nil {
					t.Fatal(err)
				}
				got, err := oc.Components(ctx, op, ComponentsOptions{Version: "latest"})
				if err != nil {
					t.Fatalf("%s from OCI: %v", op, err)
				}
				if got.Version != want.Version || objectsDigest(t, got) != objectsDigest(t, want) {
					t.Errorf("%s: OCI %s (%s) differs from local %s (%s)", op, got.Version, objectsDigest(t, got), want.Version, objectsDigest(t, want))
				}
			}
			cm, err := oc.CertManagerFile(ctx, "")
			if err != nil || cm.Version != "v1.21.1" || len(cm.Raw) == 0 {
				t.Fatalf("cert-manager from OCI: %v", err)
			}
			// The docker provider's templates travel too (generate cluster reads them).
			dp, _ := oc.Provider("docker", provider.InfrastructureProviderType)
			files, err := oc.ListFiles(ctx, dp, res.Providers[3].Version)
			if err != nil || !contains(files, "metadata.yaml") || !contains(files, "infrastructure-components.yaml") {
				t.Errorf("files of docker: %v %v", files, err)
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// An artifact pushed the way the operator's publisher pushes it (oras-go's file store, one layer
// per file named by its title, no provider annotations) is read.
func TestOCIReadsOperatorPublishedArtifact(t *testing.T) {
	reg := newTestRegistry(t)
	ctx := context.Background()
	dir := t.TempDir()
	fixture := filepath.Join(fixtureRepo(t), "infrastructure-docker")
	versions, _ := os.ReadDir(fixture)
	version := ""
	for _, v := range versions {
		if v.IsDir() && strings.HasPrefix(v.Name(), "v") {
			version = v.Name()
		}
	}
	copyFile := func(from, to string) {
		b, err := os.ReadFile(filepath.Join(fixture, version, from))
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, to), string(b))
	}
	// The operator's fullest names: {type}-{name}-{version}-{metadata|components}.yaml.
	copyFile("metadata.yaml", "infrastructure-docker-"+version+"-metadata.yaml")
	copyFile("infrastructure-components.yaml", "infrastructure-docker-"+version+"-components.yaml")
	fs, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	var layers []ocispec.Descriptor
	for _, n := range []string{"infrastructure-docker-" + version + "-metadata.yaml", "infrastructure-docker-" + version + "-components.yaml"} {
		d, err := fs.Add(ctx, n, "", "")
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, d)
	}
	m, err := oras.PackManifest(ctx, fs, oras.PackManifestVersion1_1, "application/vnd.test.provider", oras.PackManifestOptions{Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Tag(ctx, m, version); err != nil {
		t.Fatal(err)
	}
	repo, err := remote.NewRepository(reg.host + "/op/manifests/infrastructure-docker")
	if err != nil {
		t.Fatal(err)
	}
	repo.Client = &auth.Client{Client: reg.srv.Client()}
	if _, err := oras.Copy(ctx, fs, version, repo, version, oras.DefaultCopyOptions); err != nil {
		t.Fatal(err)
	}

	oc := newTestClient(t, ociConfig(t, reg.host, "op", nil), reg.options())
	p, _ := oc.Provider("docker", provider.InfrastructureProviderType)
	got, err := oc.Components(ctx, p, ComponentsOptions{Version: "latest"})
	if err != nil {
		t.Fatal(err)
	}
	local := newTestClient(t, fixtureConfig(t, ""), Options{Offline: true})
	lp, _ := local.Provider("docker", provider.InfrastructureProviderType)
	want, err := local.Components(ctx, lp, ComponentsOptions{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != version || objectsDigest(t, got) != objectsDigest(t, want) {
		t.Errorf("operator-published artifact: %s %s, want %s %s", got.Version, objectsDigest(t, got), version, objectsDigest(t, want))
	}
}

// pushRaw publishes hand-made artifacts (what a broken publisher would push) under a tag.
func pushRaw(t *testing.T, reg *testRegistry, repoPath, tag string, layers []blob, ann map[string]string) {
	t.Helper()
	ctx := context.Background()
	repo, err := remote.NewRepository(reg.host + "/" + repoPath)
	if err != nil {
		t.Fatal(err)
	}
	repo.Client = &auth.Client{Client: reg.srv.Client()}
	config := blob{desc: ocispec.DescriptorEmptyJSON, data: ocispec.DescriptorEmptyJSON.Data}
	config.desc.Data = nil
	var descs []ocispec.Descriptor
	for _, b := range append([]blob{config}, layers...) {
		if err := pushBlob(ctx, repo, b); err != nil {
			t.Fatal(err)
		}
		if b.desc.MediaType != ocispec.MediaTypeEmptyJSON {
			descs = append(descs, b.desc)
		}
	}
	m := fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"config":{"mediaType":%q,"digest":%q,"size":2},"layers":%s,"annotations":%s}`,
		ocispec.MediaTypeImageManifest, ocispec.MediaTypeEmptyJSON, ocispec.DescriptorEmptyJSON.Digest, mustJSON(t, descs), mustJSON(t, ann))
	if _, err := oras.TagBytes(ctx, repo, ocispec.MediaTypeImageManifest, []byte(m), tag); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func digestOf(b []byte) digest.Digest { return digest.FromBytes(b) }

func fileBlob(name, mediaType string, b []byte) blob {
	d := ocispec.Descriptor{MediaType: mediaType, Digest: digestOf(b), Size: int64(len(b))}
	if name != "" {
		d.Annotations = map[string]string{ocispec.AnnotationTitle: name}
	}
	return blob{d, b}
}

// Broken artifacts and registries in trouble: each a clear error naming the artifact and the
// fix, and nothing read.
func TestOCIRefusals(t *testing.T) {
	reg := newTestRegistry(t)
	ctx := context.Background()
	fx := filepath.Join(fixtureRepo(t), "infrastructure-docker")
	version := latestDir(t, fx)
	meta, _ := os.ReadFile(filepath.Join(fx, version, "metadata.yaml"))
	comps, _ := os.ReadFile(filepath.Join(fx, version, "infrastructure-components.yaml"))
	archive, err := tarGzip(map[string][]byte{"metadata.yaml": meta, "infrastructure-components.yaml": comps})
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]string{ocispec.AnnotationTitle: "infrastructure-docker", ocispec.AnnotationVersion: version, ocispec.AnnotationSource: "test",
		OCIAnnotationProviderType: "infrastructure", OCIAnnotationProviderName: "docker"}
	with := func(k, v string) map[string]string {
		out := map[string]string{}
		for a, b := range good {
			out[a] = b
		}
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	cases := []struct {
		name    string
		project string
		layers  []blob
		ann     map[string]string
		limit   int64
		want    []string
	}{
		{"wrong provider name", "wrongname", []blob{fileBlob("", ocispec.MediaTypeImageLayerGzip, archive)}, with(OCIAnnotationProviderName, "aws"), 0,
			[]string{OCIAnnotationProviderName + "=aws", "another provider's artifacts", "fix the url"}},
		{"wrong provider type", "wrongtype", []blob{fileBlob("", ocispec.MediaTypeImageLayerGzip, archive)}, with(OCIAnnotationProviderType, "bootstrap"), 0,
			[]string{OCIAnnotationProviderType + "=bootstrap"}},
		{"archive without annotations", "noann", []blob{fileBlob("", ocispec.MediaTypeImageLayerGzip, archive)}, with(OCIAnnotationProviderName, ""), 0,
			[]string{"has no " + OCIAnnotationProviderName + " annotation", "capctl repository mirror --to oci://"}},
		{"layer missing the components", "missing", []blob{fileBlob("metadata.yaml", ociFileLayer, meta)}, nil, 0,
			[]string{"has no infrastructure-components.yaml or components.yaml", "it holds metadata.yaml"}},
		{"unknown media type", "mediatype", []blob{fileBlob("metadata.yaml", "application/vnd.example.weird", meta)}, nil, 0,
			[]string{`unknown media type "application/vnd.example.weird"`}},
		{"over the input bound", "big", []blob{fileBlob("", ocispec.MediaTypeImageLayerGzip, archive)}, good, 1024,
			[]string{"larger than", userinput.Flag}},
		{"HTML page as a file", "html", []blob{fileBlob("metadata.yaml", ociFileLayer, meta), fileBlob("infrastructure-components.yaml", ociFileLayer, []byte("<!DOCTYPE html><html><body>login</body></html>"))}, nil, 0,
			[]string{"HTML page"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pushRaw(t, reg, tc.project+"/manifests/infrastructure-docker", version, tc.layers, tc.ann)
			if tc.limit > 0 {
				old := userinput.SetMax(tc.limit)
				defer userinput.SetMax(old)
			}
			oc := newTestClient(t, ociConfig(t, reg.host, tc.project, nil), reg.options())
			p, _ := oc.Provider("docker", provider.InfrastructureProviderType)
			_, err := oc.Components(ctx, p, ComponentsOptions{Version: version})
			if err == nil {
				t.Fatal("read")
			}
			for _, w := range append(tc.want, reg.host+"/"+tc.project+"/manifests/infrastructure-docker:"+version) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}

	mirrorFixture(t, reg, "ok", "")
	for _, tc := range []struct {
		status      int
		contentType string
		body        string
		want        string
	}{
		{http.StatusUnauthorized, "application/json", `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, "docker login " + reg.host},
		{http.StatusForbidden, "application/json", `{"errors":[{"code":"DENIED","message":"denied"}]}`, "403 Forbidden"},
		{http.StatusTooManyRequests, "application/json", `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`, "429 Too Many Requests"},
		{http.StatusOK, "text/html; charset=utf-8", "<html><body>Sign in to the proxy</body></html>", "HTML page"},
	} {
		t.Run(fmt.Sprintf("registry answers %d %s", tc.status, tc.contentType), func(t *testing.T) {
			reg.answer(tc.status, tc.contentType, tc.body)
			defer reg.heal()
			oc := newTestClient(t, ociConfig(t, reg.host, "ok", nil), reg.options())
			p, _ := oc.Provider("docker", provider.InfrastructureProviderType)
			_, err := oc.Components(ctx, p, ComponentsOptions{Version: "latest"})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), reg.host+"/ok/manifests/infrastructure-docker") {
				t.Errorf("error %v, want %q naming the repository", err, tc.want)
			}
		})
	}
}

func latestDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var vs []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "v") {
			vs = append(vs, e.Name())
		}
	}
	vs = sortVersions(vs)
	if len(vs) == 0 {
		t.Fatalf("no version in %s", dir)
	}
	return vs[0]
}

// Plain HTTP only for registries listed, and never with a credential; a credential never appears
// in logs, even at the most verbose level.
func TestOCIPlainHTTPAndCredentials(t *testing.T) {
	ctx := context.Background()
	plain := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer plain.Close()
	host := strings.TrimPrefix(plain.URL, "http://")

	withCred := func(context.Context, string) (auth.Credential, error) {
		return auth.Credential{Username: "robot", Password: "s3cret-Pa55"}, nil
	}
	// Not listed: HTTPS is attempted and fails against a plain server; nothing falls back to HTTP.
	oc := newTestClient(t, ociConfig(t, host, "capi", nil), Options{RetryAttempts: 1, OCICredentials: noCredentials})
	p, _ := oc.Provider("docker", provider.InfrastructureProviderType)
	if _, err := oc.Versions(ctx, p); err == nil {
		t.Fatal("plain-HTTP registry read without being listed")
	}
	listed := map[string]string{OCIPlainHTTPKey: host}
	// Listed, with a credential: refused before any request.
	var logs bytes.Buffer
	oc = newTestClient(t, ociConfig(t, host, "capi", listed), Options{RetryAttempts: 1, OCICredentials: withCred, Logger: logging.New(&logs, 10)})
	p, _ = oc.Provider("docker", provider.InfrastructureProviderType)
	_, err := oc.Versions(ctx, p)
	if err == nil || !strings.Contains(err.Error(), "never sent over plain HTTP") || !strings.Contains(err.Error(), OCIPlainHTTPKey) {
		t.Fatalf("plain HTTP with a credential: %v", err)
	}
	if strings.Contains(err.Error()+logs.String(), "s3cret") {
		t.Fatalf("the password was printed:\n%v\n%s", err, logs.String())
	}
	// Listed, no credential: read.
	oc = newTestClient(t, ociConfig(t, host, "capi", listed), Options{RetryAttempts: 1, OCICredentials: noCredentials})
	p, _ = oc.Provider("docker", provider.InfrastructureProviderType)
	// An empty registry: the answer (404, no such repository) came over plain HTTP.
	if vs, err := oc.Versions(ctx, p); !errors.Is(err, ErrNotFound) {
		t.Fatalf("listed plain registry: %v %v", vs, err)
	}
}

// A digest pins one artifact: its version comes from its annotation, it is read offline from the
// cache once read, and a client offline without a digest says what it needs.
func TestOCIDigestPinAndOffline(t *testing.T) {
	reg := newTestRegistry(t)
	ctx := context.Background()
	res := mirrorFixture(t, reg, "capi", "")
	docker := res.Providers[3]
	cache := filepath.Join(t.TempDir(), "cache")
	cfg := loadConfig(t, "providers:\n- {name: docker, type: InfrastructureProvider, url: oci://"+reg.host+"/capi/manifests/infrastructure-docker@"+docker.Digest+"}\n", nil)
	opts := reg.options()
	opts.CacheDir = cache
	oc := newTestClient(t, cfg, opts)
	p, _ := oc.Provider("docker", provider.InfrastructureProviderType)
	rel, err := oc.Resolve(ctx, p, "", ResolveOptions{})
	if err != nil || rel.Version != docker.Version {
		t.Fatalf("digest pin resolves to %v, %v; want %s", rel, err, docker.Version)
	}
	online, err := oc.Components(ctx, p, ComponentsOptions{Version: rel.Version})
	if err != nil {
		t.Fatal(err)
	}
	reg.answer(http.StatusServiceUnavailable, "application/json", `{}`)
	defer reg.heal()
	opts.Offline = true
	off := newTestClient(t, cfg, opts)
	p, _ = off.Provider("docker", provider.InfrastructureProviderType)
	got, err := off.Components(ctx, p, ComponentsOptions{Version: "latest"})
	if err != nil || objectsDigest(t, got) != objectsDigest(t, online) {
		t.Fatalf("offline from the cache: %v", err)
	}
	// A cached file changed on disk is not trusted.
	var changed bool
	_ = filepath.Walk(cache, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Name() == "infrastructure-components.yaml" {
			changed = os.WriteFile(p, []byte("kind: ConfigMap\n"), 0o644) == nil
		}
		return nil
	})
	if !changed {
		t.Fatal("no cached components file found")
	}
	off = newTestClient(t, cfg, opts)
	p, _ = off.Provider("docker", provider.InfrastructureProviderType)
	if _, err := off.Components(ctx, p, ComponentsOptions{Version: "latest"}); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Fatalf("a changed cache file was used offline: %v", err)
	}
	// Offline by tag: the tag must be resolved online.
	tagged := newTestClient(t, ociConfig(t, reg.host, "capi", nil), Options{Offline: true, CacheDir: cache, OCICredentials: noCredentials})
	p, _ = tagged.Provider("docker", provider.InfrastructureProviderType)
	if _, err := tagged.Components(ctx, p, ComponentsOptions{Version: docker.Version}); err == nil || !strings.Contains(err.Error(), "pin it by digest") {
		t.Fatalf("offline by tag: %v", err)
	}
}

// A version's tag is never moved by publishing other content to it; the digest a tag names is
// read every run, so a tag moved by someone else is seen.
func TestOCIPublishNeverMovesATagAndReadsItsDigest(t *testing.T) {
	reg := newTestRegistry(t)
	ctx := context.Background()
	first := mirrorFixture(t, reg, "capi", LayoutArchive)
	src := newTestClient(t, fixtureConfig(t, ""), reg.options())
	p, _ := src.Provider("docker", provider.InfrastructureProviderType)
	_, err := src.Mirror(ctx, "oci://"+reg.host+"/capi", []MirrorRequest{{Provider: p}}, MirrorOptions{Layout: LayoutOperator})
	if err == nil || !strings.Contains(err.Error(), "never moved") || !strings.Contains(err.Error(), first.Providers[3].Digest) {
		t.Fatalf("publishing other content under a published tag: %v", err)
	}
	oc := newTestClient(t, ociConfig(t, reg.host, "capi", nil), reg.options())
	op, _ := oc.Provider("docker", provider.InfrastructureProviderType)
	s, _, err := oc.source(op)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.(*ociSource).Digest(ctx, first.Providers[3].Version)
	if err != nil || d != first.Providers[3].Digest {
		t.Fatalf("digest %s %v, want %s", d, err, first.Providers[3].Digest)
	}
	if errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
}

// Bad references are refused before any request, naming the form.
func TestOCIReferenceParsing(t *testing.T) {
	for raw, want := range map[string]string{
		"oci://user:pw@registry.example/capi/manifests/core-cluster-api": "docker login",
		"oci://registry.example/capi/manifests/core-cluster-api:latest":  "never `latest`",
		"oci://registry.example/capi/manifests/core-cluster-api@sha256:": "",
		"oci://registry.example": "oci://HOST/PATH/NAME",
	} {
		_, err := parseLocation(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: the URL's password is in the error: %v", raw, err)
		}
	}
	l, err := parseLocation("oci://registry.example:5000/capi/manifests/infrastructure-docker:v1.14.2")
	if err != nil || l.host != "registry.example:5000" || l.repoPath != "capi/manifests/infrastructure-docker" || l.version != "v1.14.2" {
		t.Fatalf("%+v %v", l, err)
	}
	if p := (Provider{Name: "docker", Type: provider.InfrastructureProviderType, URL: "oci://r/capi/manifests/infrastructure-docker"}); p.ComponentsFile() != "infrastructure-components.yaml" {
		t.Errorf("components file %s", p.ComponentsFile())
	}
	for to, want := range map[string]string{
		"oci://registry.example":           "PROJECT",
		"oci://registry.example/capi:v1":   "without a tag",
		"oci://u:p@registry.example/capi":  "docker login",
		"oci://registry.example/capi/../x": "not a valid repository",
	} {
		if err := CheckMirrorDir(to); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--to %s: %v, want %q", to, err, want)
		}
	}
	if err := CheckMirrorLayout("/srv/mirror", LayoutOperator); err == nil {
		t.Error("--layout with a folder accepted")
	}
}

// Versions are the repository's semver tags; latest resolves among them as for GitHub (the
// upgrade plan's catalog reads the same list).
func TestOCIVersionsFromTags(t *testing.T) {
	reg := newTestRegistry(t)
	ctx := context.Background()
	src := newTestClient(t, fixtureConfig(t, ""), reg.options())
	p, _ := src.Provider("docker", provider.InfrastructureProviderType)
	var reqs []MirrorRequest
	for _, v := range []string{"v1.13.5", "v1.14.0"} {
		reqs = append(reqs, MirrorRequest{Provider: p, Version: v})
	}
	if _, err := src.Mirror(ctx, "oci://"+reg.host+"/capi", reqs, MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	oc := newTestClient(t, ociConfig(t, reg.host, "capi", nil), reg.options())
	op, _ := oc.Provider("docker", provider.InfrastructureProviderType)
	vs, err := oc.Versions(ctx, op)
	if err != nil || strings.Join(vs, ",") != "v1.14.0,v1.13.5" {
		t.Fatalf("versions %v %v", vs, err)
	}
	rel, err := oc.Resolve(ctx, op, "latest", ResolveOptions{})
	if err != nil || rel.Version != "v1.14.0" {
		t.Fatalf("latest: %v %v", rel, err)
	}
	if _, err := oc.Resolve(ctx, op, "v1.12.11", ResolveOptions{}); err == nil || !strings.Contains(err.Error(), "has no version v1.12.11; nearest available: v1.14.0, v1.13.5") {
		t.Fatalf("a version not published: %v", err)
	}
}
