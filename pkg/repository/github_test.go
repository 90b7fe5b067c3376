package repository

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/provider"
)

// fakeGitHub answers the GitHub REST shapes capctl uses (releases list with Link pagination,
// release by tag, asset download) under /api/, and plain release downloads under /dl/. Release
// assets of kubernetes-sigs/cluster-api are the fixture repository's files.
type fakeGitHub struct {
	t        testing.TB
	srv      *httptest.Server
	releases map[string][]fakeRelease // by owner/repo, newest first
	files    map[string]string        // owner/repo/tag/asset -> path on disk or inline "data:" text

	api, downloads, assetAPI atomic.Int64
	mu                       sync.Mutex
	authHeaders              []string
	downloadAuth             []string
	proxy                    atomic.Int64
	proxyTags                map[string]string // module path -> @v/list body
	proxyFail                atomic.Bool
	rateLimited              atomic.Int64 // answer this status with X-RateLimit-Remaining: 0
	failNext                 atomic.Int64 // answer 503 this many times
}

type fakeRelease struct {
	Tag    string
	Draft  bool
	Assets []string
}

func (f *fakeGitHub) total() int64 { return f.api.Load() + f.downloads.Load() + f.assetAPI.Load() }

func newFakeGitHub(t testing.TB) *fakeGitHub {
	f := &fakeGitHub{t: t, releases: map[string][]fakeRelease{}, files: map[string]string{}, proxyTags: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// newFakeGitHubTLS is newFakeGitHub over HTTPS (options() then trusts its certificate), for
// tests where a token must be sent: capctl never sends one over plain HTTP.
func newFakeGitHubTLS(t testing.TB) *fakeGitHub {
	f := &fakeGitHub{t: t, releases: map[string][]fakeRelease{}, files: map[string]string{}, proxyTags: map[string]string{}}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// addFixtureCAPI publishes the fixture versions as releases of kubernetes-sigs/cluster-api, plus a
// draft v1.15.0 (not published) and v1.14.1 without metadata.yaml (a broken release).
func (f *fakeGitHub) addFixtureCAPI(repo string) {
	const r = "kubernetes-sigs/cluster-api"
	f.releases[r] = append(f.releases[r], fakeRelease{Tag: "v1.15.0", Draft: true}, fakeRelease{Tag: "v1.14.1", Assets: []string{"core-components.yaml"}})
	f.files[r+"/v1.14.1/core-components.yaml"] = filepath.Join(repo, "cluster-api", "v1.14.0", "core-components.yaml")
	for _, v := range []string{"v1.14.0", "v1.13.5", "v1.13.4", "v1.12.11", "v1.10.10"} {
		rel := fakeRelease{Tag: v}
		for asset, src := range map[string]string{
			"core-components.yaml":                       "cluster-api/" + v + "/core-components.yaml",
			"bootstrap-components.yaml":                  "bootstrap-kubeadm/" + v + "/bootstrap-components.yaml",
			"control-plane-components.yaml":              "control-plane-kubeadm/" + v + "/control-plane-components.yaml",
			"infrastructure-components-development.yaml": "infrastructure-docker/" + v + "/infrastructure-components.yaml",
			"metadata.yaml":                              "cluster-api/" + v + "/metadata.yaml",
			"cluster-template-development.yaml":          "infrastructure-docker/" + v + "/cluster-template-development.yaml",
			"clusterclass-quick-start.yaml":              "infrastructure-docker/" + v + "/clusterclass-quick-start.yaml",
		} {
			p := filepath.Join(repo, src)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			rel.Assets = append(rel.Assets, asset)
			f.files[r+"/"+v+"/"+asset] = p
		}
		f.releases[r] = append(f.releases[r], rel)
	}
}

func (f *fakeGitHub) content(key string) ([]byte, bool) {
	src, ok := f.files[key]
	if !ok {
		return nil, false
	}
	if strings.HasPrefix(src, "data:") {
		return []byte(strings.TrimPrefix(src, "data:")), true
	}
	b, err := os.ReadFile(src)
	return b, err == nil
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/proxy/") {
		f.proxy.Add(1)
		mod, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/proxy/"), "/@v/list")
		body, found := f.proxyTags[mod]
		switch {
		case f.proxyFail.Load():
			http.Error(w, "proxy down", http.StatusBadGateway)
		case !ok || !found:
			http.Error(w, "not found", http.StatusNotFound)
		default:
			_, _ = w.Write([]byte(body))
		}
		return
	}
	if code := f.rateLimited.Load(); code != 0 {
		if strings.HasPrefix(r.URL.Path, "/api/") {
			f.api.Add(1)
		} else {
			f.downloads.Add(1)
		}
		w.Header().Set("X-RateLimit-Limit", "60")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(42*time.Minute).Unix(), 10))
		w.WriteHeader(int(code))
		_, _ = w.Write([]byte(`{"message":"API rate limit exceeded for 192.0.2.1.","documentation_url":"https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`))
		return
	}
	if f.failNext.Load() > 0 {
		f.failNext.Add(-1)
		f.api.Add(1)
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(segs) >= 1 && segs[0] == "api":
		f.mu.Lock()
		f.authHeaders = append(f.authHeaders, r.Header.Get("Authorization"))
		f.mu.Unlock()
		f.serveAPI(w, r, segs[1:])
	case len(segs) == 7 && segs[0] == "dl" && segs[3] == "releases" && segs[4] == "download":
		f.downloads.Add(1)
		f.mu.Lock()
		f.downloadAuth = append(f.downloadAuth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		b, ok := f.content(segs[1] + "/" + segs[2] + "/" + segs[5] + "/" + segs[6])
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeGitHub) releaseJSON(repo string, idx int, rel fakeRelease) map[string]any {
	var assets []map[string]any
	for j, a := range rel.Assets {
		assets = append(assets, map[string]any{
			"id": (idx+1)*1000 + j, "name": a,
			"browser_download_url": f.srv.URL + "/dl/" + repo + "/releases/download/" + rel.Tag + "/" + a,
		})
	}
	return map[string]any{"id": idx + 1, "tag_name": rel.Tag, "draft": rel.Draft, "prerelease": strings.Contains(rel.Tag, "-"), "assets": assets}
}

func (f *fakeGitHub) serveAPI(w http.ResponseWriter, r *http.Request, segs []string) {
	// repos/OWNER/REPO/releases[...]
	if len(segs) < 4 || segs[0] != "repos" || segs[3] != "releases" {
		http.NotFound(w, r)
		return
	}
	repo := segs[1] + "/" + segs[2]
	rels, ok := f.releases[repo]
	w.Header().Set("X-RateLimit-Remaining", "59")
	switch {
	case len(segs) == 4: // list
		f.api.Add(1)
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"Not Found"}`))
			return
		}
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		if per == 0 {
			per = 30
		}
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if page == 0 {
			page = 1
		}
		start, end := (page-1)*per, page*per
		if end > len(rels) {
			end = len(rels)
		}
		var out []map[string]any
		for i := start; i < end; i++ {
			out = append(out, f.releaseJSON(repo, i, rels[i]))
		}
		if end < len(rels) {
			w.Header().Set("Link", fmt.Sprintf(`<%s/api/repos/%s/releases?per_page=%d&page=%d>; rel="next"`, f.srv.URL, repo, per, page+1))
		}
		_ = json.NewEncoder(w).Encode(out)
	case len(segs) == 6 && segs[4] == "tags":
		f.api.Add(1)
		for i, rel := range rels {
			if rel.Tag == segs[5] && !rel.Draft {
				_ = json.NewEncoder(w).Encode(f.releaseJSON(repo, i, rel))
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"Not Found"}`))
	case len(segs) == 6 && segs[4] == "assets":
		f.assetAPI.Add(1)
		id, _ := strconv.Atoi(segs[5])
		for i, rel := range rels {
			for j, a := range rel.Assets {
				if (i+1)*1000+j == id {
					b, _ := f.content(repo + "/" + rel.Tag + "/" + a)
					w.Header().Set("Content-Type", "application/octet-stream")
					_, _ = w.Write(b)
					return
				}
			}
		}
		http.NotFound(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeGitHub) options(cacheDir string) Options {
	var hc *http.Client
	if f.srv.TLS != nil {
		hc = f.srv.Client()
	}
	return Options{
		HTTPClient:        hc,
		GitHubAPIURL:      f.srv.URL + "/api/",
		GitHubDownloadURL: f.srv.URL + "/dl",
		CacheDir:          cacheDir,
		RetryBackoff:      time.Millisecond,
		GoProxy:           "off",
	}
}

func TestGitHubLatestPinsCacheAndZeroRequestReruns(t *testing.T) {
	gh := newFakeGitHubTLS(t)
	gh.addFixtureCAPI(fixtureRepo(t))
	cfg := loadConfig(t, "", map[string]string{"GITHUB_TOKEN": "ghp_test_token"})
	cacheDir := filepath.Join(t.TempDir(), "cache")
	ctx := context.Background()

	c := newTestClient(t, cfg, gh.options(cacheDir))
	core, _ := c.Provider("cluster-api", provider.CoreProviderType)
	r, err := c.Resolve(ctx, core, "", ResolveOptions{})
	if err != nil || r.Version != "v1.14.0" || r.Contract != "v1beta2" {
		t.Fatalf("latest: %+v %v", r, err)
	}
	if n := gh.api.Load(); n != 1 {
		t.Errorf("resolving latest cost %d API calls, want 1 (one releases page)", n)
	}
	if _, err := c.GetFile(ctx, core, r.Version, core.ComponentsFile()); err != nil {
		t.Fatal(err)
	}
	gh.mu.Lock()
	for _, h := range gh.authHeaders {
		if h != "Bearer ghp_test_token" {
			t.Errorf("API call without the token: %q", h)
		}
	}
	for _, h := range gh.downloadAuth {
		if h != "" {
			t.Error("the token was sent with a plain download")
		}
	}
	gh.mu.Unlock()

	// Pinned versions from the built-in docker URL (infrastructure-components-development.yaml).
	docker, _ := c.Provider("docker", provider.InfrastructureProviderType)
	r, err = c.Resolve(ctx, docker, "v1.13.4", ResolveOptions{})
	if err != nil || r.Version != "v1.13.4" {
		t.Fatalf("pin: %+v %v", r, err)
	}
	if _, err := c.GetFile(ctx, docker, "v1.13.4", docker.ComponentsFile()); err != nil {
		t.Fatal(err)
	}
	before := gh.total()

	// A second run (new client, same cache) with pins makes no request at all.
	c2 := newTestClient(t, cfg, gh.options(cacheDir))
	for _, pin := range []struct {
		p Provider
		v string
	}{{core, "v1.14.0"}, {docker, "v1.13.4"}} {
		r, err := c2.Resolve(ctx, pin.p, pin.v, ResolveOptions{})
		if err != nil || r.Version != pin.v {
			t.Fatalf("second run %s: %+v %v", pin.v, r, err)
		}
		if _, err := c2.GetFile(ctx, pin.p, pin.v, pin.p.ComponentsFile()); err != nil {
			t.Fatal(err)
		}
	}
	// "latest" within the TTL: no request either.
	if r, err := c2.Resolve(ctx, core, "latest", ResolveOptions{}); err != nil || r.Version != "v1.14.0" {
		t.Fatalf("latest from cache: %+v %v", r, err)
	}
	if d := gh.total() - before; d != 0 {
		t.Errorf("second run made %d GitHub requests, want 0", d)
	}

	// After the TTL the list is fetched again (one call).
	o3 := gh.options(cacheDir)
	o3.Now = func() time.Time { return time.Now().Add(time.Hour) }
	c3 := newTestClient(t, cfg, o3)
	apiBefore := gh.api.Load()
	if r, err := c3.Resolve(ctx, core, "latest", ResolveOptions{}); err != nil || r.Version != "v1.14.0" {
		t.Fatalf("latest after TTL: %+v %v", r, err)
	}
	if d := gh.api.Load() - apiBefore; d != 1 {
		t.Errorf("expired list: %d API calls, want 1", d)
	}

	// Offline: the cache alone serves pins and latest; anything else says why it fails.
	before = gh.total()
	off := gh.options(cacheDir)
	off.Offline = true
	c4 := newTestClient(t, cfg, off)
	if r, err := c4.Resolve(ctx, core, "", ResolveOptions{}); err != nil || r.Version != "v1.14.0" {
		t.Errorf("offline latest: %+v %v", r, err)
	}
	if _, err := c4.Resolve(ctx, docker, "v1.12.11", ResolveOptions{}); err == nil || !strings.Contains(err.Error(), "offline") {
		t.Errorf("offline, not cached: %v", err)
	}
	if d := gh.total() - before; d != 0 {
		t.Errorf("offline made %d requests", d)
	}
}

// TestGitHubTokenNeverOverPlainHTTP: with the API pointed at an http:// address the token stays
// home, and stderr says why the calls are unauthenticated (without the token).
func TestGitHubTokenNeverOverPlainHTTP(t *testing.T) {
	gh := newFakeGitHub(t)
	gh.addFixtureCAPI(fixtureRepo(t))
	var logs bytes.Buffer
	opts := gh.options("-")
	opts.Logger = logging.New(&logs, 0)
	c := newTestClient(t, loadConfig(t, "", map[string]string{"GITHUB_TOKEN": "ghp_test_token"}), opts)
	core, _ := c.Provider("cluster-api", provider.CoreProviderType)
	if _, err := c.Versions(context.Background(), core); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetFile(context.Background(), core, "v1.14.0", "no-such-file.yaml"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
	gh.mu.Lock()
	defer gh.mu.Unlock()
	if len(gh.authHeaders) == 0 {
		t.Fatal("no API call was made")
	}
	for _, h := range append(gh.authHeaders, gh.downloadAuth...) {
		if h != "" {
			t.Errorf("a credential went over plain HTTP: %q", h)
		}
	}
	if !strings.Contains(logs.String(), "GITHUB_TOKEN") || !strings.Contains(logs.String(), "not HTTPS") || strings.Contains(logs.String(), "ghp_test_token") {
		t.Errorf("stderr does not say why (or shows the token):\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "GITHUB_TOKEN"); n != 1 {
		t.Errorf("the reason was printed %d times, want once", n)
	}
}

func TestGitHubPinWithoutCacheNeedsNoAPICall(t *testing.T) {
	gh := newFakeGitHub(t)
	gh.addFixtureCAPI(fixtureRepo(t))
	cfg := loadConfig(t, "", nil)
	c := newTestClient(t, cfg, gh.options(""))
	ctx := context.Background()
	kcp, _ := c.Provider("kubeadm", provider.ControlPlaneProviderType)
	r, err := c.Resolve(ctx, kcp, "v1.10.10", ResolveOptions{})
	if err != nil || r.Contract != "v1beta1" {
		t.Fatalf("%+v %v", r, err)
	}
	if gh.api.Load() != 0 {
		t.Errorf("a pinned version cost %d API calls, want 0 (plain downloads only)", gh.api.Load())
	}
	// A version that does not exist: one listing call, and the nearest versions in the error.
	_, err = c.Resolve(ctx, kcp, "v1.13.9", ResolveOptions{})
	var nf *VersionNotFoundError
	if !errors.As(err, &nf) || strings.Join(nf.Nearest, ",") != "v1.13.5,v1.13.4" && !strings.Contains(err.Error(), "v1.13.5") {
		t.Errorf("missing version: %v", err)
	}
	if gh.api.Load() != 1 {
		t.Errorf("missing version: %d API calls, want 1", gh.api.Load())
	}
	// An unknown repository is a clear not-found.
	cfg = loadConfig(t, "providers:\n- name: nope\n  type: InfrastructureProvider\n  url: https://github.com/acme/nope/releases/latest/infrastructure-components.yaml\n", nil)
	c = newTestClient(t, cfg, gh.options(""))
	p, _ := c.Provider("nope", provider.InfrastructureProviderType)
	if _, err := c.Versions(ctx, p); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "acme/nope") {
		t.Errorf("unknown repo: %v", err)
	}
}

func TestGitHubRateLimit(t *testing.T) {
	for _, code := range []int{http.StatusForbidden, http.StatusTooManyRequests} {
		gh := newFakeGitHub(t)
		gh.addFixtureCAPI(fixtureRepo(t))
		gh.rateLimited.Store(int64(code))
		c := newTestClient(t, loadConfig(t, "", nil), gh.options(""))
		core, _ := c.Provider("cluster-api", provider.CoreProviderType)
		_, err := c.Resolve(context.Background(), core, "", ResolveOptions{})
		var rl *RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("%d: want a RateLimitError, got %v", code, err)
		}
		if rl.Reset.IsZero() || time.Until(rl.Reset) < 40*time.Minute {
			t.Errorf("%d: reset time %v", code, rl.Reset)
		}
		for _, want := range []string{"GITHUB_TOKEN", "local repository", "cache", "resets at"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%d: message lacks %q: %v", code, want, err)
			}
		}
		if gh.total() != 1 {
			t.Errorf("%d: a rate-limited request must not be retried (%d requests)", code, gh.total())
		}
		// Downloads are rate-limited too.
		_, err = c.Resolve(context.Background(), core, "v1.14.0", ResolveOptions{})
		if !errors.As(err, &rl) {
			t.Errorf("%d: download: want a RateLimitError, got %v", code, err)
		}
	}
}

func TestGitHubRetriesOn5xxNotOn4xx(t *testing.T) {
	gh := newFakeGitHub(t)
	gh.addFixtureCAPI(fixtureRepo(t))
	c := newTestClient(t, loadConfig(t, "", nil), gh.options(""))
	core, _ := c.Provider("cluster-api", provider.CoreProviderType)
	gh.failNext.Store(2)
	vs, err := c.Versions(context.Background(), core)
	if err != nil || len(vs) != 6 {
		t.Fatalf("after two 503s: %v %v", vs, err)
	}
	if gh.api.Load() != 3 {
		t.Errorf("want 3 attempts, got %d", gh.api.Load())
	}
	// 404 is final: one request.
	before := gh.downloads.Load()
	_, err = c.GetFile(context.Background(), core, "v1.14.0", "no-such-file.yaml")
	if !errors.Is(err, ErrNotFound) || gh.downloads.Load()-before != 1 {
		t.Errorf("404: %v after %d requests", err, gh.downloads.Load()-before)
	}
	// Persistent 5xx: the error says what was being fetched.
	gh.failNext.Store(100)
	c = newTestClient(t, loadConfig(t, "", nil), gh.options(""))
	_, err = c.Versions(context.Background(), core)
	if err == nil || !strings.Contains(err.Error(), "kubernetes-sigs/cluster-api") || !strings.Contains(err.Error(), "503") {
		t.Errorf("persistent 503: %v", err)
	}
	gh.failNext.Store(0)
}

func TestNetworkFailureNamesWhatWasFetched(t *testing.T) {
	gh := newFakeGitHub(t)
	opts := gh.options("")
	gh.srv.Close() // nothing listens any more
	c := newTestClient(t, loadConfig(t, "", nil), opts)
	docker, _ := c.Provider("docker", provider.InfrastructureProviderType)
	_, err := c.Resolve(context.Background(), docker, "v1.14.0", ResolveOptions{})
	if err == nil || !strings.Contains(err.Error(), "metadata.yaml") || !strings.Contains(err.Error(), "v1.14.0") || !strings.Contains(err.Error(), "attempts") {
		t.Errorf("network failure: %v", err)
	}
	_, err = c.Versions(context.Background(), docker)
	if err == nil || !strings.Contains(err.Error(), "listing releases of kubernetes-sigs/cluster-api") {
		t.Errorf("network failure while listing: %v", err)
	}
}

func TestGitHubPaginationAndPrivateAssetFallback(t *testing.T) {
	gh := newFakeGitHubTLS(t) // the token is used, so HTTPS
	var rels []fakeRelease
	for i := 150; i >= 1; i-- {
		rels = append(rels, fakeRelease{Tag: fmt.Sprintf("v0.%d.0", i), Assets: []string{"metadata.yaml"}})
		gh.files[fmt.Sprintf("acme/infra/v0.%d.0/metadata.yaml", i)] = fmt.Sprintf("data:apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nreleaseSeries:\n- {major: 0, minor: %d, contract: v1beta2}\n", i)
	}
	rels = append([]fakeRelease{{Tag: "not-semver"}}, rels...)
	gh.releases["acme/infra"] = rels
	cfg := loadConfig(t, "providers:\n- name: acme\n  type: InfrastructureProvider\n  url: https://github.com/acme/infra/releases/latest/infrastructure-components.yaml\n", map[string]string{"GITHUB_TOKEN": "t"})
	c := newTestClient(t, cfg, gh.options(""))
	p, _ := c.Provider("acme", provider.InfrastructureProviderType)
	vs, err := c.Versions(context.Background(), p)
	if err != nil || len(vs) != 150 || vs[0] != "v0.150.0" {
		t.Fatalf("%d versions, first %v, %v", len(vs), vs[:1], err)
	}
	if gh.api.Load() != 2 {
		t.Errorf("151 releases should cost 2 list calls, got %d", gh.api.Load())
	}
	// With a token, a plain 404 falls back to the API's asset download (private repositories).
	gh.releases["acme/infra"][1].Assets = append(gh.releases["acme/infra"][1].Assets, "private.yaml")
	gh.files["acme/infra/v0.150.0/private.yaml"] = "data:kind: X\n"
	gh.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/dl/") {
			gh.downloads.Add(1)
			http.NotFound(w, r)
			return
		}
		gh.serve(w, r)
	})
	c = newTestClient(t, cfg, gh.options(""))
	b, err := c.GetFile(context.Background(), p, "v0.150.0", "private.yaml")
	if err != nil || string(b) != "kind: X\n" {
		t.Fatalf("API fallback: %q %v", b, err)
	}
	if gh.assetAPI.Load() != 1 {
		t.Errorf("asset API calls: %d", gh.assetAPI.Load())
	}
}

// BenchmarkVersionListingAPICalls reports the GitHub API calls spent listing versions and resolving
// "latest" for a provider with 150 releases, cold and with a warm cache.
func BenchmarkVersionListingAPICalls(b *testing.B) {
	gh := newFakeGitHub(b)
	var rels []fakeRelease
	for i := 150; i >= 1; i-- {
		rels = append(rels, fakeRelease{Tag: fmt.Sprintf("v0.%d.0", i), Assets: []string{"metadata.yaml"}})
		gh.files[fmt.Sprintf("acme/infra/v0.%d.0/metadata.yaml", i)] = fmt.Sprintf("data:apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nreleaseSeries:\n- {major: 0, minor: %d, contract: v1beta2}\n", i)
	}
	gh.releases["acme/infra"] = rels
	cfg := loadConfig(b, "providers:\n- name: acme\n  type: InfrastructureProvider\n  url: https://github.com/acme/infra/releases/latest/infrastructure-components.yaml\n", nil)
	warm := filepath.Join(b.TempDir(), "warm")
	if c, err := New(cfg, gh.options(warm)); err == nil {
		p, _ := c.Provider("acme", provider.InfrastructureProviderType)
		if _, err := c.Resolve(context.Background(), p, "", ResolveOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var cold, hot int64
	for i := 0; i < b.N; i++ {
		before := gh.api.Load()
		c, _ := New(cfg, gh.options(filepath.Join(b.TempDir(), fmt.Sprint("cold", i))))
		p, _ := c.Provider("acme", provider.InfrastructureProviderType)
		if _, err := c.Resolve(context.Background(), p, "", ResolveOptions{}); err != nil {
			b.Fatal(err)
		}
		cold += gh.api.Load() - before
		before = gh.api.Load()
		for j := 0; j < 2; j++ {
			c, _ := New(cfg, gh.options(warm))
			if _, err := c.Resolve(context.Background(), p, "", ResolveOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		hot += gh.api.Load() - before
	}
	// With a Go module proxy, as capctl commands use by default.
	gh.proxyTags["github.com/acme/infra"] = func() string {
		var sb strings.Builder
		for i := 1; i <= 150; i++ {
			fmt.Fprintf(&sb, "v0.%d.0\n", i)
		}
		return sb.String()
	}()
	var viaProxy int64
	for i := 0; i < b.N; i++ {
		opts := gh.options(filepath.Join(b.TempDir(), fmt.Sprint("proxy", i)))
		opts.GoProxy = gh.srv.URL + "/proxy"
		c, _ := New(cfg, opts)
		p, _ := c.Provider("acme", provider.InfrastructureProviderType)
		before := gh.api.Load()
		if _, err := c.Resolve(context.Background(), p, "", ResolveOptions{}); err != nil {
			b.Fatal(err)
		}
		viaProxy += gh.api.Load() - before
	}
	b.ReportMetric(float64(viaProxy)/float64(b.N), "api-calls/cold-latest-goproxy")
	b.ReportMetric(float64(cold)/float64(b.N), "api-calls/cold-latest")
	b.ReportMetric(float64(hot)/float64(2*b.N), "api-calls/warm-latest")
}

func TestGoProxyListingCostsNoAPICall(t *testing.T) {
	gh := newFakeGitHub(t)
	gh.addFixtureCAPI(fixtureRepo(t))
	// The proxy lists tags, including v1.14.1 (a broken release) and v1.15.0 (tag, draft release).
	gh.proxyTags["github.com/kubernetes-sigs/cluster-api"] = "v1.10.10\nv1.12.11\nv1.13.4\nv1.13.5\nv1.14.0\nv1.14.1\nv1.15.0\nnot-a-version\n"
	opts := gh.options("")
	opts.GoProxy = gh.srv.URL + "/proxy"
	c := newTestClient(t, loadConfig(t, "", nil), opts)
	core, _ := c.Provider("cluster-api", provider.CoreProviderType)
	r, err := c.Resolve(context.Background(), core, "", ResolveOptions{})
	if err != nil || r.Version != "v1.14.0" {
		t.Fatalf("latest through the proxy: %+v %v", r, err)
	}
	if gh.api.Load() != 0 {
		t.Errorf("version listing through the proxy cost %d GitHub API calls, want 0", gh.api.Load())
	}
	if gh.proxy.Load() != 2 { // @v/list and /v2/@v/list (404)
		t.Errorf("proxy requests: %d", gh.proxy.Load())
	}
	// A failing proxy falls back to the API.
	gh.proxyFail.Store(true)
	c = newTestClient(t, loadConfig(t, "", nil), opts)
	if r, err := c.Resolve(context.Background(), core, "", ResolveOptions{}); err != nil || r.Version != "v1.14.0" || gh.api.Load() != 1 {
		t.Errorf("proxy down: %+v %v, %d API calls", r, err, gh.api.Load())
	}
	if got := escapeModulePath("github.com/HuaweiCloudDeveloper/x"); got != "github.com/!huawei!cloud!developer/x" {
		t.Errorf("escape: %s", got)
	}
	for in, want := range map[string]string{"": "https://proxy.golang.org", "off": "", "direct": "", "proxy.example.com,direct": "https://proxy.example.com", "http://p:3000|off": "http://p:3000"} {
		if got := GoProxyFromEnv(in); got != want {
			t.Errorf("GoProxyFromEnv(%q) = %q, want %q", in, got, want)
		}
	}
}
