package repository

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v66/github"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/provider"
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
	// RetryAttempts and RetryBackoff govern retries on network errors and transient answers
	// (exponential backoff). Zero: DefaultRetryAttempts / DefaultRetryBackoff.
	RetryAttempts int
	RetryBackoff  time.Duration
	// Logger receives progress at V(1) and per-file detail at V(5). Nil discards.
	Logger *logging.Logger
	// OCICredentials resolves OCI registries' credentials. Nil: Docker's credential store.
	OCICredentials OCICredentials
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

	// OCI registries: one HTTP client and token cache for the run (ociSource).
	ociHTTP      *http.Client
	ociAuthCache auth.Cache
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
	case "oci":
		if loc.repoPath == "" {
			return nil, nil, fmt.Errorf("%s: %s names no repository", p, p.URL)
		}
		if s, err = c.ociSource(p, loc); err != nil {
			return nil, nil, err
		}
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
	} else if b, err := userinput.ReadFile(ctx, ov); err == nil {
		level := 1
		if file == p.ComponentsFile() {
			level = 0
		}
		c.log.V(level).Info("Using override", "file", ov)
		return b, fromOverride, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		// An override that exists but cannot be used is not silently replaced by the release.
		return nil, "", fmt.Errorf("override %s cannot be used: %w", ov, err)
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
		// Changed, cut or without its checksum: say so and fetch it once more.
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
