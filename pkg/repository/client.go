package repository

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-github/v66/github"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/versions"
)

// Defaults of Options.
const (
	DefaultGitHubAPIURL      = "https://api.github.com/"
	DefaultGitHubDownloadURL = "https://github.com"
	DefaultVersionsTTL       = 10 * time.Minute
	DefaultRetryAttempts     = 4
	DefaultRetryBackoff      = time.Second
)

// Options tune a Client. The zero value is what a capctl run uses.
type Options struct {
	// HTTPClient is used for GitHub API calls and downloads; its transport is wrapped with
	// retries. Nil uses http.DefaultTransport with a 2-minute timeout.
	HTTPClient *http.Client
	// GitHubAPIURL is the GitHub REST API root (GitHub Enterprise: https://HOST/api/v3/; tests: an
	// httptest server). Empty: api.github.com for github.com URLs, https://HOST/api/v3/ otherwise.
	GitHubAPIURL string
	// GitHubDownloadURL is where release assets are downloaded from by plain HTTPS
	// ({url}/OWNER/REPO/releases/download/TAG/FILE). Empty: https://HOST of the provider URL.
	GitHubDownloadURL string
	// GitHubToken authenticates API calls. Empty: GITHUB_TOKEN from the environment or the config.
	GitHubToken string
	// GoProxy is a Go module proxy URL used to list GitHub versions without API calls (clusterctl
	// does the same). Empty: from the GOPROXY environment variable (GoProxyFromEnv: default
	// https://proxy.golang.org); "off" lists through the GitHub API. Proxy failures fall back to
	// the API.
	GoProxy string
	// GitLabToken is the Bearer token for GitLab package URLs. Empty: GITLAB_ACCESS_TOKEN from the
	// environment or gitlab-access-token / GITLAB_ACCESS_TOKEN from the config.
	GitLabToken string
	// CacheDir holds downloaded files and version lists. Empty: config.CacheDir(). "-" disables
	// the disk cache.
	CacheDir string
	// VersionsTTL is how long a fetched version list (used to resolve "latest") is trusted.
	// Zero: DefaultVersionsTTL. Negative: never trust a cached list (always ask).
	VersionsTTL time.Duration
	// Offline forbids every network request: versions and files come from local repositories,
	// the overrides folder and the cache only.
	Offline bool
	// RetryAttempts and RetryBackoff govern retries on network errors and 5xx answers
	// (exponential backoff). Zero: DefaultRetryAttempts / DefaultRetryBackoff.
	RetryAttempts int
	RetryBackoff  time.Duration
	// Logger receives progress at V(1) and per-file detail at V(5). Nil discards.
	Logger *logging.Logger
	// Now replaces time.Now (tests of the TTL).
	Now func() time.Time
}

// Client resolves providers, versions and files. It is safe for concurrent use; files read once are
// kept in memory for the rest of the run.
type Client struct {
	cfg         *config.Config
	opts        Options
	registry    *Registry
	cache       *diskCache
	http        *http.Client
	token       string
	gitlabToken string
	log         *logging.Logger

	mu       sync.Mutex
	sources  map[string]source // by provider URL
	files    map[string][]byte // in-memory cache: source key|version|file
	versions map[string][]string
	listed   map[string]*cachedVersions // by provider URL: the GitHub list in use, for unpublished marks
}

// New builds a Client from the configuration (nil: built-in providers only, no variables).
func New(cfg *config.Config, opts Options) (*Client, error) {
	reg, err := NewRegistry(cfg)
	if err != nil {
		return nil, err
	}
	if opts.VersionsTTL == 0 {
		opts.VersionsTTL = DefaultVersionsTTL
	}
	if opts.RetryAttempts <= 0 {
		opts.RetryAttempts = DefaultRetryAttempts
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = DefaultRetryBackoff
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	switch opts.GoProxy {
	case "":
		opts.GoProxy = GoProxyFromEnv(os.Getenv("GOPROXY"))
	case "off", "direct":
		opts.GoProxy = ""
	}
	c := &Client{
		cfg: cfg, opts: opts, registry: reg,
		sources: map[string]source{}, files: map[string][]byte{}, versions: map[string][]string{}, listed: map[string]*cachedVersions{},
		log: opts.Logger,
	}
	if c.log == nil {
		c.log = logging.Discard()
	}
	switch opts.CacheDir {
	case "-":
	case "":
		c.cache = &diskCache{dir: filepath.Join(config.CacheDir(), "repositories")}
	default:
		c.cache = &diskCache{dir: opts.CacheDir}
	}
	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{Timeout: 2 * time.Minute}
	}
	hc := *base
	hc.Transport = &retryTransport{base: base.Transport, attempts: opts.RetryAttempts, backoff: opts.RetryBackoff}
	c.http = &hc
	c.token = opts.GitHubToken
	if c.token == "" && cfg != nil {
		c.token = cfg.GitHubToken()
	}
	c.gitlabToken = opts.GitLabToken
	if c.gitlabToken == "" && cfg != nil {
		for _, k := range []string{"GITLAB_ACCESS_TOKEN", "gitlab-access-token"} {
			if v, ok := cfg.Lookup(k); ok && v != "" {
				c.gitlabToken = v
				break
			}
		}
	}
	return c, nil
}

// Registry returns the provider registry (built-ins and config overrides).
func (c *Client) Registry() *Registry { return c.registry }

// Provider returns the provider of that name and type, or an *UnknownProviderError.
func (c *Client) Provider(name string, t provider.Type) (Provider, error) {
	return c.registry.Get(name, t)
}

// source returns the repository behind p's URL, validating the URL.
func (c *Client) source(p Provider) (source, *location, error) {
	loc, err := parseLocation(p.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", p, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sources[p.URL]; ok {
		return s, loc, nil
	}
	var s source
	switch loc.kind {
	case "local":
		if loc.label != p.ManifestLabel() {
			return nil, nil, fmt.Errorf("%s: local repository path %s must have the folder %q (the provider label) where it has %q: {basepath}/%s/{version}/%s",
				p, p.URL, p.ManifestLabel(), loc.label, p.ManifestLabel(), loc.file)
		}
		s = &localSource{basePath: loc.basePath, label: loc.label}
	case "github":
		gh, tokenUsable, err := c.githubClient(loc.host)
		if err != nil {
			return nil, nil, err
		}
		dl := c.opts.GitHubDownloadURL
		if dl == "" {
			dl = "https://" + loc.host
		}
		s = &githubSource{gh: gh, http: c.http, downloadBase: dl, owner: loc.owner, repo: loc.repo, rootPath: loc.rootPath, hasToken: tokenUsable,
			goproxy: c.opts.GoProxy, log: func(msg string, kv ...any) { c.log.V(1).Info(msg, kv...) }}
	case "gitlab":
		s = &gitlabSource{http: WithCredential(c.http, "GITLAB_ACCESS_TOKEN", "Authorization", bearer(c.gitlabToken), []string{loc.host}, c.warn),
			scheme: loc.scheme, host: loc.host, project: loc.owner, pkg: loc.repo, version: loc.version}
	}
	c.sources[p.URL] = s
	return s, loc, nil
}

// githubClient is the API client for a GitHub host. The token goes only to the API's own host
// over HTTPS (WithCredential); usable says whether it goes at all.
func (c *Client) githubClient(host string) (gh *github.Client, usable bool, err error) {
	api := c.opts.GitHubAPIURL
	if api == "" && host != "github.com" {
		api = "https://" + host + "/api/v3/"
	}
	if api == "" {
		api = DefaultGitHubAPIURL
	}
	if !strings.HasSuffix(api, "/") {
		api += "/"
	}
	u, err := url.Parse(api)
	if err != nil {
		return nil, false, fmt.Errorf("GitHub API URL %q: %w", api, err)
	}
	gh = github.NewClient(WithCredential(c.http, "GITHUB_TOKEN", "Authorization", bearer(c.token), []string{u.Host}, c.warn))
	gh.BaseURL = u
	gh.UploadURL = u
	return gh, c.token != "" && CredentialRefusal(u, u.Host) == "", nil
}

// warn prints a one-line warning on stderr (verbosity 0).
func (c *Client) warn(msg string) { c.log.Info("Warning: " + msg) }

// offlineError says a network fetch was needed in offline mode.
func offlineError(what string) error {
	return fmt.Errorf("%s needs the network, but capctl runs offline: fetch it once online (it is then cached), or use a local repository", what)
}

// Versions lists the versions of p's repository, newest first (semver order; pre-releases sort
// below their final release). GitHub lists are cached on disk for Options.VersionsTTL; offline, a
// cached list of any age is used.
func (c *Client) Versions(ctx context.Context, p Provider) ([]string, error) {
	s, _, err := c.source(p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if v, ok := c.versions[p.URL]; ok {
		c.mu.Unlock()
		return v, nil
	}
	c.mu.Unlock()
	key := s.cacheKey()
	var vs []string
	switch {
	case key == "":
		vs, err = s.versions(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing versions of %s: %w", p, err)
		}
	default:
		cached, ok := c.cache.getVersions(key)
		switch {
		case ok && (c.opts.Offline || (c.opts.VersionsTTL > 0 && c.opts.Now().Sub(cached.Fetched) < c.opts.VersionsTTL)):
			c.log.V(5).Info("Using cached version list", "repository", s.String(), "fetched", cached.Fetched.Format(time.RFC3339))
			vs = cached.Versions
			c.mu.Lock()
			c.listed[p.URL] = cached
			c.mu.Unlock()
		case c.opts.Offline:
			return nil, offlineError(fmt.Sprintf("listing the versions of %s (%s)", p, s))
		default:
			c.log.V(5).Info("Listing versions", "repository", s.String())
			vs, err = s.versions(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing versions of %s: %w%s", p, err, networkHint(err))
			}
			cv := &cachedVersions{Fetched: c.opts.Now(), Versions: vs}
			if err := c.cache.putVersions(key, *cv); err != nil {
				c.log.V(1).Info("Could not cache the version list", "error", err.Error())
			}
			c.mu.Lock()
			c.listed[p.URL] = cv
			c.mu.Unlock()
		}
	}
	vs = sortVersions(vs)
	c.mu.Lock()
	c.versions[p.URL] = vs
	c.mu.Unlock()
	return vs, nil
}

// sortVersions drops non-semver entries and duplicates and sorts newest first.
func sortVersions(in []string) []string {
	type pv struct {
		s string
		v *semver.Version
	}
	seen := map[string]bool{}
	var ps []pv
	for _, s := range in {
		v, err := versions.Parse(s)
		if err != nil || seen[s] {
			continue
		}
		seen[s] = true
		ps = append(ps, pv{s, v})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].v.GreaterThan(ps[j].v) })
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.s
	}
	return out
}

// GetFile returns file of version of p: from the overrides folder
// ({overridesFolder}/{provider-label}/{version}/{file}) if present, else from the in-memory or disk
// cache, else from the repository (and then caches it).
func (c *Client) GetFile(ctx context.Context, p Provider, version, file string) ([]byte, error) {
	b, _, err := c.getFile(ctx, p, version, file)
	return b, err
}

// fileOrigin says where GetFile found a file.
type fileOrigin string

const (
	fromOverride fileOrigin = "override"
	fromCache    fileOrigin = "cache"
	fromRepo     fileOrigin = "repository"
)

func (c *Client) getFile(ctx context.Context, p Provider, version, file string) ([]byte, fileOrigin, error) {
	if version == "" || version == "latest" {
		return nil, "", fmt.Errorf("%s: GetFile needs a resolved version, not %q", p, version)
	}
	if ov, err := c.overridePath(p, version, file); err != nil {
		return nil, "", err
	} else if b, err := os.ReadFile(ov); err == nil {
		level := 1
		if file == p.ComponentsFile() {
			level = 0
		}
		c.log.V(level).Info("Using override", "file", ov)
		return b, fromOverride, nil
	}
	s, _, err := c.source(p)
	if err != nil {
		return nil, "", err
	}
	memKey := p.URL + "|" + version + "|" + file
	c.mu.Lock()
	b, ok := c.files[memKey]
	c.mu.Unlock()
	if ok {
		return b, fromCache, nil
	}
	key := s.cacheKey()
	if b, path, bad, ok := c.cache.getFile(key, version, file); ok {
		if bad == nil {
			c.remember(memKey, b)
			return b, fromCache, nil
		}
		if c.opts.Offline {
			return nil, "", fmt.Errorf("the cached %s of %s %s (%s) is not valid: %v; offline it cannot be fetched again: run `capctl repository cache clean %s:%s` and then once online",
				file, p, version, path, bad, p.ManifestLabel(), version)
		}
		// Fetched by an older capctl or damaged: say so and fetch it once more.
		c.log.Info("The cached file is not valid, fetching it again", "file", path, "reason", bad.Error())
		c.cache.removeFile(path)
	}
	if key != "" && c.opts.Offline {
		return nil, "", offlineError(fmt.Sprintf("%s %s of %s (not in the cache %s)", file, version, p, c.cacheDir()))
	}
	c.log.V(5).Info("Fetching", "file", file, "provider", p.ManifestLabel(), "version", version)
	u := s.fileURL(version, file)
	b, err = s.getFile(ctx, version, file)
	if err != nil {
		return nil, "", fmt.Errorf("fetching %s of %s %s from %s: %w%s", file, p, version, u, err, networkHint(err))
	}
	if key != "" {
		// Check before caching: a pinned version's files are served from the cache forever.
		if err := validateFile(file, b); err != nil {
			return nil, "", fmt.Errorf("fetching %s of %s %s from %s: %w; nothing was cached", file, p, version, u, err)
		}
	}
	if err := c.cache.putFile(key, version, file, b); err != nil {
		c.log.V(1).Info("Could not cache a file", "error", err.Error())
	}
	c.remember(memKey, b)
	return b, fromRepo, nil
}

func (c *Client) cacheDir() string {
	if c.cache == nil {
		return "(disabled)"
	}
	return c.cache.dir
}

func (c *Client) remember(k string, b []byte) {
	c.mu.Lock()
	c.files[k] = b
	c.mu.Unlock()
}

func (c *Client) overridesFolder() string {
	if c.cfg == nil {
		return filepath.Join(config.ConfigDir(), "overrides")
	}
	return c.cfg.OverridesFolder()
}

func (c *Client) overridePath(p Provider, version, file string) (string, error) {
	return safeJoin(c.overridesFolder(), p.ManifestLabel(), version, file)
}

// hasLocally reports whether file of version is available without the network.
func (c *Client) hasLocally(p Provider, version, file string) bool {
	if ov, err := c.overridePath(p, version, file); err == nil {
		if st, err := os.Stat(ov); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	s, _, err := c.source(p)
	if err != nil {
		return false
	}
	if l, ok := s.(*localSource); ok {
		p, err := safeJoin(filepath.Join(l.basePath, l.label), version, file)
		if err != nil {
			return false
		}
		st, err := os.Stat(p)
		return err == nil && st.Mode().IsRegular()
	}
	return c.cache.hasFile(s.cacheKey(), version, file)
}

// Metadata reads and validates metadata.yaml of version of p.
func (c *Client) Metadata(ctx context.Context, p Provider, version string) (*Metadata, error) {
	b, err := c.GetFile(ctx, p, version, MetadataFile)
	if err != nil {
		return nil, err
	}
	m, err := ParseMetadata(b)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %s: %w", p, version, MetadataFile, err)
	}
	return m, nil
}

// Release is a resolved provider version with its metadata.
type Release struct {
	Provider Provider      `json:"provider"`
	Version  string        `json:"version"`
	Series   ReleaseSeries `json:"series"`
	Contract string        `json:"contract"`
	Metadata *Metadata     `json:"-"`
}

// ResolveOptions tune Resolve.
type ResolveOptions struct {
	// Pre lets "latest" pick pre-releases (otherwise they are chosen only when no final release exists).
	Pre bool
}

// VersionNotFoundError says a requested version does not exist; Nearest lists the closest ones.
type VersionNotFoundError struct {
	Provider Provider
	Version  string
	Nearest  []string
}

func (e *VersionNotFoundError) Error() string {
	msg := fmt.Sprintf("%s has no version %s", e.Provider, e.Version)
	if len(e.Nearest) > 0 {
		msg += "; nearest available: " + strings.Join(e.Nearest, ", ")
	} else {
		msg += "; the repository lists no versions"
	}
	return msg
}

func (e *VersionNotFoundError) Unwrap() error { return ErrNotFound }

// Resolve turns version ("" = the version in the provider URL, "latest", or a pin like v1.14.0)
// into a Release. A pinned version whose components file is in the overrides folder, the cache or a
// local repository is used without listing versions, so pinned runs need no network. "latest" is
// the newest final release whose metadata implements the current contract (clusterctl's rule).
// The version's series must be present in its own metadata.yaml.
func (c *Client) Resolve(ctx context.Context, p Provider, version string, opts ResolveOptions) (*Release, error) {
	_, loc, err := c.source(p)
	if err != nil {
		return nil, err
	}
	if version == "" {
		version = loc.version
	}
	if version == "latest" {
		v, err := c.latest(ctx, p, opts)
		if err != nil {
			return nil, err
		}
		version = v
	} else {
		if err := provider.ValidateVersion(version); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if !strings.HasPrefix(version, "v") {
			version = "v" + version
		}
		if !c.hasLocally(p, version, p.ComponentsFile()) && !c.hasLocally(p, version, MetadataFile) {
			if _, err := c.GetFile(ctx, p, version, MetadataFile); err != nil {
				if errors.Is(err, ErrNotFound) {
					return nil, c.notFound(ctx, p, version, err)
				}
				return nil, err
			}
		}
	}
	return c.release(ctx, p, version)
}

// release reads the metadata of a concrete version and checks the version's series.
func (c *Client) release(ctx context.Context, p Provider, version string) (*Release, error) {
	m, err := c.Metadata(ctx, p, version)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, c.notFound(ctx, p, version, err)
		}
		return nil, err
	}
	s, err := m.SeriesFor(version)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", p, version, err)
	}
	return &Release{Provider: p, Version: version, Series: s, Contract: s.Contract, Metadata: m}, nil
}

// notFound builds a VersionNotFoundError with the nearest available versions; when listing fails
// (offline, network) the original error is kept.
func (c *Client) notFound(ctx context.Context, p Provider, version string, cause error) error {
	vs, err := c.Versions(ctx, p)
	if err != nil {
		return fmt.Errorf("%w (listing versions to suggest others failed: %v)", cause, err)
	}
	for _, v := range vs {
		if v == version {
			// Listed but its files are missing: report the file error itself.
			return cause
		}
	}
	return &VersionNotFoundError{Provider: p, Version: version, Nearest: nearest(version, vs, 3)}
}

// nearest returns up to n versions closest to want: same major.minor first, then by distance.
func nearest(want string, have []string, n int) []string {
	w, err := versions.Parse(want)
	type scored struct {
		s string
		d float64
	}
	var ss []scored
	for _, h := range have {
		v, perr := versions.Parse(h)
		if perr != nil {
			continue
		}
		d := 0.0
		if err == nil {
			d = abs(float64(v.Major())-float64(w.Major()))*1e6 + abs(float64(v.Minor())-float64(w.Minor()))*1e3 + abs(float64(v.Patch())-float64(w.Patch()))
			if v.Prerelease() != "" {
				d += 0.5
			}
		}
		ss = append(ss, scored{h, d})
	}
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].d < ss[j].d })
	var out []string
	for i := 0; i < len(ss) && i < n; i++ {
		out = append(out, ss[i].s)
	}
	return sortVersions(out)
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// latestCandidates is how many top versions are tried before giving up (clusterctl: 5).
const latestCandidates = 5

// latest resolves "latest" as clusterctl does (spec §3.5): newest final release (pre-releases only
// when there is no final release, or with Pre); a tag whose metadata.yaml is missing (no published
// release) is skipped; if that release's series does not implement the current contract, the newest
// series that does is used instead.
func (c *Client) latest(ctx context.Context, p Provider, opts ResolveOptions) (string, error) {
	vs, err := c.Versions(ctx, p)
	if err != nil {
		return "", err
	}
	cands := orderCandidates(vs, opts.Pre)
	if len(cands) == 0 {
		return "", fmt.Errorf("%s: the repository has no version tagged with a semantic version number", p)
	}
	first, m, err := c.firstPublished(ctx, p, cands)
	if err != nil {
		return "", err
	}
	fv := versions.MustParse(first)
	s, err := m.SeriesFor(first)
	if err == nil && s.Contract == contract.Current {
		return first, nil
	}
	cs, ok := m.LatestSeriesForContract(contract.Current)
	if !ok || (uint64(cs.Major) == fv.Major() && uint64(cs.Minor) == fv.Minor()) {
		// No series implements the current contract: keep the newest release, as clusterctl does.
		return first, nil
	}
	var inSeries []string
	for _, v := range cands {
		sv := versions.MustParse(v)
		if sv.Major() == uint64(cs.Major) && sv.Minor() == uint64(cs.Minor) {
			inSeries = append(inSeries, v)
		}
	}
	if len(inSeries) == 0 {
		return first, nil
	}
	v, _, err := c.firstPublished(ctx, p, inSeries)
	if err != nil {
		return "", err
	}
	return v, nil
}

// orderCandidates sorts versions: final releases (newest first), then pre-releases, unless pre.
func orderCandidates(vs []string, pre bool) []string {
	sorted := sortVersions(vs)
	if pre {
		return sorted
	}
	var finals, pres []string
	for _, v := range sorted {
		if versions.MustParse(v).Prerelease() == "" {
			finals = append(finals, v)
		} else {
			pres = append(pres, v)
		}
	}
	return append(finals, pres...)
}

// firstPublished returns the first candidate (of the top few) whose metadata.yaml exists.
func (c *Client) firstPublished(ctx context.Context, p Provider, cands []string) (string, *Metadata, error) {
	var skipped []string
	for i, v := range cands {
		if i >= latestCandidates {
			break
		}
		if c.isUnpublished(p, v) {
			skipped = append(skipped, v)
			continue
		}
		m, err := c.Metadata(ctx, p, v)
		if err == nil {
			if len(skipped) > 0 {
				c.log.V(1).Info("Skipped versions without a published release", "provider", p.ManifestLabel(), "versions", skipped)
			}
			return v, m, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return "", nil, err
		}
		c.markUnpublished(p, v)
		skipped = append(skipped, v)
	}
	return "", nil, fmt.Errorf("%s: none of the newest versions (%s) has a published release with %s", p, strings.Join(skipped, ", "), MetadataFile)
}

// isUnpublished tells whether v is known (from the trusted version list) to have no release files.
func (c *Client) isUnpublished(p Provider, v string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cv := c.listed[p.URL]; cv != nil {
		for _, u := range cv.Unpublished {
			if u == v {
				return true
			}
		}
	}
	return false
}

// markUnpublished remembers, with the version list, that v has no metadata.yaml, so runs within the
// list's TTL do not ask again.
func (c *Client) markUnpublished(p Provider, v string) {
	s, _, err := c.source(p)
	if err != nil {
		return
	}
	c.mu.Lock()
	cv := c.listed[p.URL]
	if cv == nil {
		c.mu.Unlock()
		return
	}
	cv.Unpublished = append(cv.Unpublished, v)
	snapshot := *cv
	c.mu.Unlock()
	if err := c.cache.putVersions(s.cacheKey(), snapshot); err != nil {
		c.log.V(1).Info("Could not cache the version list", "error", err.Error())
	}
}

// ListFiles names the files of version of p: the repository's files (a local version folder, the
// assets of a GitHub release; offline, the cached files) together with files in the overrides
// folder, sorted.
func (c *Client) ListFiles(ctx context.Context, p Provider, version string) ([]string, error) {
	s, _, err := c.source(p)
	if err != nil {
		return nil, err
	}
	var files []string
	if s.cacheKey() != "" && c.opts.Offline {
		files = c.cache.listFiles(s.cacheKey(), version)
	} else if files, err = s.listFiles(ctx, version); err != nil {
		return nil, fmt.Errorf("listing the files of %s %s: %w", p, version, err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		seen[f] = true
	}
	if dir, err := safeJoin(c.overridesFolder(), p.ManifestLabel(), version); err == nil {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Type().IsRegular() && !seen[e.Name()] {
				seen[e.Name()] = true
				files = append(files, e.Name())
			}
		}
	}
	sort.Strings(files)
	return files, nil
}

// networkHint adds what to do when a request never got an answer (DNS, refused, timeout).
func networkHint(err error) string {
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return " (the network is unreachable from here: check connectivity and proxy settings, or work offline from the cache or a local repository, see `capctl repository mirror`)"
	}
	return ""
}
