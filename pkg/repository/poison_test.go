package repository

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/internal/testing/userinputtest"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/provider"
)

const htmlPage = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body><form>proxy login</form></body></html>\n"

const widgetMetadata = `apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Metadata
releaseSeries:
- major: 1
  minor: 0
  contract: v1beta2
`

const widgetComponents = `apiVersion: v1
kind: Namespace
metadata:
  name: widget-system
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: widget
  namespace: widget-system
`

// widgetGitHub publishes acme/widget v1.0.0 with the given files on a fake GitHub.
func widgetGitHub(t *testing.T, metadata, components string) (*fakeGitHub, Provider, *Client, string) {
	t.Helper()
	gh := newFakeGitHub(t)
	gh.releases["acme/widget"] = []fakeRelease{{Tag: "v1.0.0", Assets: []string{"metadata.yaml", "infrastructure-components.yaml"}}}
	gh.files["acme/widget/v1.0.0/metadata.yaml"] = "data:" + metadata
	gh.files["acme/widget/v1.0.0/infrastructure-components.yaml"] = "data:" + components
	cfg := loadConfig(t, "providers:\n- name: widget\n  type: InfrastructureProvider\n  url: https://github.com/acme/widget/releases/latest/infrastructure-components.yaml\n", nil)
	cacheDir := filepath.Join(t.TempDir(), "cache")
	c := newTestClient(t, cfg, gh.options(cacheDir))
	p, err := c.Provider("widget", provider.InfrastructureProviderType)
	if err != nil {
		t.Fatal(err)
	}
	return gh, p, c, cacheDir
}

func cachedPath(cacheDir, file string) string {
	return filepath.Join(cacheDir, "files", "github", "acme", "widget", "v1.0.0", file)
}

// TestHTMLMetadataIsNotCachedAndSaysWhatItIs: a proxy's login page served as metadata.yaml is
// named for what it is, with its URL, without Go type names, and is not cached: once upstream
// is fixed the next run fetches again and works.
func TestHTMLMetadataIsNotCachedAndSaysWhatItIs(t *testing.T) {
	gh, p, c, cacheDir := widgetGitHub(t, htmlPage, widgetComponents)
	ctx := context.Background()
	_, err := c.Resolve(ctx, p, "v1.0.0", ResolveOptions{})
	if err == nil {
		t.Fatal("an HTML metadata.yaml was accepted")
	}
	for _, want := range []string{"the server returned an HTML page, not metadata.yaml", gh.srv.URL + "/dl/acme/widget/releases/download/v1.0.0/metadata.yaml"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	for _, bad := range []string{"Go value", "repository.Metadata", "unmarshal"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("error shows %q: %v", bad, err)
		}
	}
	if _, err := os.Stat(cachedPath(cacheDir, "metadata.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the HTML page was cached: %v", err)
	}

	// Upstream fixed: a new run (same cache) asks again and succeeds.
	gh.files["acme/widget/v1.0.0/metadata.yaml"] = "data:" + widgetMetadata
	before := gh.total()
	c2 := newTestClient(t, loadConfig(t, "providers:\n- name: widget\n  type: InfrastructureProvider\n  url: https://github.com/acme/widget/releases/latest/infrastructure-components.yaml\n", nil), gh.options(cacheDir))
	if r, err := c2.Resolve(ctx, p, "v1.0.0", ResolveOptions{}); err != nil || r.Contract != "v1beta2" {
		t.Fatalf("after the fix: %+v %v", r, err)
	}
	if gh.total() == before {
		t.Error("after the fix no request was made: the bad file was served from the cache")
	}
}

// TestHTMLComponentsAreNotCached: an HTML page as the components file fails saying so and is not
// cached.
func TestHTMLComponentsAreNotCached(t *testing.T) {
	_, p, c, cacheDir := widgetGitHub(t, widgetMetadata, htmlPage)
	_, err := c.Components(context.Background(), p, ComponentsOptions{Version: "v1.0.0"})
	if err == nil || !strings.Contains(err.Error(), "the server returned an HTML page, not infrastructure-components.yaml") {
		t.Fatalf("HTML components: %v", err)
	}
	if _, err := os.Stat(cachedPath(cacheDir, "infrastructure-components.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the HTML page was cached: %v", err)
	}
}

// TestPoisonedCacheIsRefetchedOnce: a cached file that does not parse (left by an older version,
// or damaged) is reported with its cache path and fetched again once; offline it is an error that
// names the path and the way to clean it.
func TestPoisonedCacheIsRefetchedOnce(t *testing.T) {
	gh, p, _, cacheDir := widgetGitHub(t, widgetMetadata, widgetComponents)
	for _, f := range []string{"metadata.yaml", "infrastructure-components.yaml"} {
		writeTestFile(t, cachedPath(cacheDir, f), htmlPage)
	}
	var logs bytes.Buffer
	opts := gh.options(cacheDir)
	opts.Logger = logging.New(&logs, 0)
	cfg := loadConfig(t, "providers:\n- name: widget\n  type: InfrastructureProvider\n  url: https://github.com/acme/widget/releases/latest/infrastructure-components.yaml\n", nil)

	off := opts
	off.Offline = true
	_, err := newTestClient(t, cfg, off).Components(context.Background(), p, ComponentsOptions{Version: "v1.0.0"})
	if err == nil || !strings.Contains(err.Error(), cachedPath(cacheDir, "metadata.yaml")) || !strings.Contains(err.Error(), "capctl repository cache clean") {
		t.Errorf("offline with a poisoned cache: %v", err)
	}

	c := newTestClient(t, cfg, opts)
	before := gh.downloads.Load()
	comp, err := c.Components(context.Background(), p, ComponentsOptions{Version: "v1.0.0"})
	if err != nil {
		t.Fatalf("poisoned cache was not repaired: %v", err)
	}
	if len(comp.Objects) != 2 {
		t.Errorf("objects %d", len(comp.Objects))
	}
	if n := gh.downloads.Load() - before; n != 2 {
		t.Errorf("%d downloads, want 2 (each bad file once)", n)
	}
	for _, f := range []string{"metadata.yaml", "infrastructure-components.yaml"} {
		if !strings.Contains(logs.String(), cachedPath(cacheDir, f)) {
			t.Errorf("the log does not name the bad cached file %s:\n%s", f, logs.String())
		}
		b, _ := os.ReadFile(cachedPath(cacheDir, f))
		if bytes.Contains(b, []byte("<html>")) {
			t.Errorf("%s is still the HTML page in the cache", f)
		}
	}
	// The repaired cache serves the next run without a request.
	before = gh.total()
	if _, err := newTestClient(t, cfg, gh.options(cacheDir)).Components(context.Background(), p, ComponentsOptions{Version: "v1.0.0"}); err != nil {
		t.Fatal(err)
	}
	if d := gh.total() - before; d != 0 {
		t.Errorf("the repaired cache cost %d requests", d)
	}
}

// TestTruncatedDownloadIsRetriedThenNamed: a body cut before its Content-Length is retried like
// any transient failure; when it keeps being cut the error says how many bytes arrived.
func TestTruncatedDownloadIsRetriedThenNamed(t *testing.T) {
	var cuts atomic.Int64
	var requests atomic.Int64
	body := []byte(widgetMetadata)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if !strings.HasSuffix(r.URL.Path, "/metadata.yaml") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if cuts.Load() > 0 {
			cuts.Add(-1)
			_, _ = w.Write(body[:40])
			w.(http.Flusher).Flush()
			// Close the connection before Content-Length bytes went out.
			if hj, ok := w.(http.Hijacker); ok {
				conn, buf, _ := hj.Hijack()
				_ = buf.Flush()
				_ = conn.Close()
			}
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	cfg := loadConfig(t, "providers:\n- name: widget\n  type: InfrastructureProvider\n  url: https://github.com/acme/widget/releases/latest/infrastructure-components.yaml\n", nil)
	opts := Options{GitHubAPIURL: srv.URL + "/api/", GitHubDownloadURL: srv.URL + "/dl", RetryBackoff: time.Millisecond, GoProxy: "off", CacheDir: "-"}
	c := newTestClient(t, cfg, opts)
	p, _ := c.Provider("widget", provider.InfrastructureProviderType)

	cuts.Store(2)
	if _, err := c.Resolve(context.Background(), p, "v1.0.0", ResolveOptions{}); err != nil {
		t.Fatalf("two cut downloads then a whole one: %v", err)
	}

	cuts.Store(1000)
	requests.Store(0)
	c = newTestClient(t, cfg, opts)
	_, err := c.Resolve(context.Background(), p, "v1.0.0", ResolveOptions{})
	want := "download of " + srv.URL + "/dl/acme/widget/releases/download/v1.0.0/metadata.yaml was cut after 40 of " + strconv.Itoa(len(body)) + " bytes"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("persistently cut download: %v, want %q", err, want)
	}
	if strings.Contains(err.Error(), "not found") {
		t.Errorf("a cut download is reported as not found: %v", err)
	}
	if n := requests.Load(); n != int64(DefaultRetryAttempts) {
		t.Errorf("%d requests, want %d attempts", n, DefaultRetryAttempts)
	}
}

// TestCleanCache removes one version, one repository or the whole cache, and says what went.
func TestCleanCache(t *testing.T) {
	gh := newFakeGitHub(t)
	gh.addFixtureCAPI(fixtureRepo(t))
	cacheDir := filepath.Join(t.TempDir(), "cache")
	cfg := loadConfig(t, "", nil)
	c := newTestClient(t, cfg, gh.options(cacheDir))
	ctx := context.Background()
	core, _ := c.Provider("cluster-api", provider.CoreProviderType)
	docker, _ := c.Provider("docker", provider.InfrastructureProviderType)
	for _, v := range []string{"v1.14.0", "v1.13.5"} {
		if _, err := c.Components(ctx, core, ComponentsOptions{Version: v, SkipVariables: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Versions(ctx, core); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cacheDir, "files", "github", "kubernetes-sigs", "cluster-api")

	res, err := c.CleanCache(&docker, "v1.14.0")
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 2 || res.Bytes == 0 || len(res.Removed) != 1 || res.Removed[0] != filepath.Join(dir, "v1.14.0") {
		t.Errorf("one version: %+v", res)
	}
	if !strings.Contains(strings.Join(res.SharedWith, ","), "cluster-api") {
		t.Errorf("the providers sharing the repository are not named: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "v1.13.5", "core-components.yaml")); err != nil {
		t.Errorf("another version went too: %v", err)
	}
	res, err = c.CleanCache(&core, "")
	if err != nil || res.Files != 3 || len(res.Removed) != 2 { // v1.13.5's two files and the version list
		t.Errorf("one repository: %+v %v", res, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("repository folder still there: %v", err)
	}
	if res, err := c.CleanCache(nil, ""); err != nil || res.Dir != cacheDir {
		t.Errorf("everything: %+v %v", res, err)
	}
	if entries, _ := os.ReadDir(cacheDir); len(entries) != 0 {
		t.Errorf("cache not empty: %v", entries)
	}
	// A local repository has nothing cached.
	local := newTestClient(t, fixtureConfig(t, ""), Options{CacheDir: cacheDir})
	lp, _ := local.Provider("docker", provider.InfrastructureProviderType)
	if res, err := local.CleanCache(&lp, ""); err != nil || res.Files != 0 || !strings.Contains(res.Note, "local repository") {
		t.Errorf("local: %+v %v", res, err)
	}
}

// TestCutCachedFileIsNeverReblessed: a cached components file cut at a document boundary is
// still valid YAML. With its checksum beside it, the checksum no longer matches; with the checksum
// removed too, the cut file cannot be told from a good one. Either way, offline it is refused
// (naming the file and why); online it is fetched again; and the cut file's checksum is never
// written as if it were good: the one recorded afterwards is the release's.
func TestCutCachedFileIsNeverReblessed(t *testing.T) {
	for _, tc := range []struct {
		name         string
		dropChecksum bool
		why          string
	}{
		{"checksum kept", false, "changed after it was cached"},
		{"checksum removed", true, "no checksum beside it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh, p, c, cacheDir := widgetGitHub(t, widgetMetadata, widgetComponents)
			ctx := context.Background()
			if _, err := c.Components(ctx, p, ComponentsOptions{Version: "v1.0.0"}); err != nil {
				t.Fatal(err)
			}
			path := cachedPath(cacheDir, "infrastructure-components.yaml")
			side, err := os.ReadFile(sidecarPath(path))
			if err != nil {
				t.Fatalf("no checksum beside the cached file: %v", err)
			}
			writeTestFile(t, path, widgetComponents[:strings.Index(widgetComponents, "---")])
			if tc.dropChecksum {
				if err := os.Remove(sidecarPath(path)); err != nil {
					t.Fatal(err)
				}
			}
			cfg := loadConfig(t, "providers:\n- name: widget\n  type: InfrastructureProvider\n  url: https://github.com/acme/widget/releases/latest/infrastructure-components.yaml\n", nil)

			off := gh.options(cacheDir)
			off.Offline = true
			_, err = newTestClient(t, cfg, off).Components(ctx, p, ComponentsOptions{Version: "v1.0.0"})
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("offline with a cut cached file: %v, want a refusal naming %s and saying %q", err, path, tc.why)
			}
			now, err := os.ReadFile(sidecarPath(path))
			if tc.dropChecksum && !os.IsNotExist(err) {
				t.Fatalf("the cut file was given a checksum: %q (%v)", now, err)
			} else if !tc.dropChecksum && !bytes.Equal(now, side) {
				t.Fatalf("the cut file's checksum was recorded: %q, was %q", now, side)
			}

			before := gh.downloads.Load()
			comp, err := newTestClient(t, cfg, gh.options(cacheDir)).Components(ctx, p, ComponentsOptions{Version: "v1.0.0"})
			if err != nil {
				t.Fatalf("online with a cut cached file: %v", err)
			}
			if len(comp.Objects) != 2 {
				t.Errorf("%d objects installed, want the 2 of the release", len(comp.Objects))
			}
			if n := gh.downloads.Load() - before; n != 1 {
				t.Errorf("%d downloads, want the cut file fetched once", n)
			}
			if b, _ := os.ReadFile(path); string(b) != widgetComponents {
				t.Errorf("the cache still holds the cut file:\n%s", b)
			}
			if side, _ := os.ReadFile(sidecarPath(path)); strings.TrimSpace(string(side)) != checksum([]byte(widgetComponents)) {
				t.Errorf("checksum now %q, want the release's", side)
			}
		})
	}
}

// TestEndlessCachedFileIsNotReadToTheEnd: a cache entry replaced by an endless stream is read
// up to the input bound and refused, naming the cache path.
func TestEndlessCachedFileIsNotReadToTheEnd(t *testing.T) {
	gh, p, c, cacheDir := widgetGitHub(t, widgetMetadata, widgetComponents)
	ctx := context.Background()
	if _, err := c.Components(ctx, p, ComponentsOptions{Version: "v1.0.0"}); err != nil {
		t.Fatal(err)
	}
	path := cachedPath(cacheDir, "infrastructure-components.yaml")
	userinputtest.DevZeroAt(t, path)
	defer userinput.SetMax(userinput.SetMax(1 << 20))
	cfg := loadConfig(t, "providers:\n- name: widget\n  type: InfrastructureProvider\n  url: https://github.com/acme/widget/releases/latest/infrastructure-components.yaml\n", nil)
	off := gh.options(cacheDir)
	off.Offline = true
	_, err := newTestClient(t, cfg, off).Components(ctx, p, ComponentsOptions{Version: "v1.0.0"})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "larger than 1Mi") {
		t.Fatalf("offline with /dev/zero in the cache: %v, want a refusal naming %s and the bound", err, path)
	}
}
