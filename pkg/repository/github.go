package repository

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/versions"
)

// maxFileSize bounds a downloaded file (the largest upstream components file is ~10 MiB).
const maxFileSize = 128 << 20

// githubSource is a repository of GitHub release assets. Versions come from the releases API
// (100 per page: one API call for most providers); files are downloaded by plain HTTPS from
// {downloadBase}/OWNER/REPO/releases/download/TAG/FILE, which costs no API quota, with the API
// (release by tag, then the asset) as the fallback.
type githubSource struct {
	gh           *github.Client
	http         *http.Client
	downloadBase string
	owner, repo  string
	rootPath     string
	hasToken     bool
	goproxy      string // Go module proxy base URL for version listing; "" = GitHub API
	log          func(msg string, kv ...any)

	mu       sync.Mutex
	releases map[string]*github.RepositoryRelease // by tag, filled by listing or GetReleaseByTag
}

func (g *githubSource) String() string   { return fmt.Sprintf("GitHub %s/%s", g.owner, g.repo) }
func (g *githubSource) cacheKey() string { return path.Join("github", g.owner, g.repo) }

func (g *githubSource) asset(file string) string { return path.Join(g.rootPath, file) }

func (g *githubSource) fileURL(version, file string) string {
	return fmt.Sprintf("%s/%s/%s/releases/download/%s/%s", strings.TrimRight(g.downloadBase, "/"), g.owner, g.repo, version, g.asset(file))
}

func (g *githubSource) versions(ctx context.Context) ([]string, error) {
	if g.goproxy != "" {
		vs, err := g.proxyVersions(ctx)
		if err == nil && len(vs) > 0 {
			return vs, nil
		}
		// As clusterctl: any proxy problem falls back to the GitHub API.
		if g.log != nil {
			g.log("Go module proxy did not list versions, using the GitHub API", "repository", g.owner+"/"+g.repo, "error", fmt.Sprint(err))
		}
	}
	what := fmt.Sprintf("listing releases of %s/%s", g.owner, g.repo)
	opts := &github.ListOptions{PerPage: 100}
	var out []string
	rels := map[string]*github.RepositoryRelease{}
	for {
		page, resp, err := g.gh.Repositories.ListReleases(ctx, g.owner, g.repo, opts)
		if err != nil {
			return nil, githubError(what, err)
		}
		for _, r := range page {
			// A draft is not published: its tag has no downloadable release yet.
			if r.GetDraft() {
				continue
			}
			tag := r.GetTagName()
			if _, err := versions.Parse(tag); err != nil {
				continue
			}
			out = append(out, tag)
			rels[tag] = r
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	g.mu.Lock()
	if g.releases == nil {
		g.releases = map[string]*github.RepositoryRelease{}
	}
	for k, v := range rels {
		g.releases[k] = v
	}
	g.mu.Unlock()
	return out, nil
}

func (g *githubSource) getFile(ctx context.Context, version, file string) ([]byte, error) {
	u := g.fileURL(version, file)
	data, status, err := g.download(ctx, u)
	if err == nil {
		return data, nil
	}
	var rl *RateLimitError
	var te *TruncatedError
	if errors.As(err, &rl) || errors.As(err, &te) {
		return nil, err
	}
	if status == http.StatusNotFound && !g.hasToken {
		// As clusterctl: a plain 404 is final (no release, or no such asset).
		return nil, fmt.Errorf("%s: %w", u, ErrNotFound)
	}
	// Private repositories and flaky downloads: try the API with the token.
	data, apiErr := g.getFileByAPI(ctx, version, file)
	if apiErr == nil {
		return data, nil
	}
	if errors.Is(apiErr, ErrNotFound) || errors.As(apiErr, &rl) {
		return nil, apiErr
	}
	return nil, fmt.Errorf("downloading %s: %v; through the GitHub API: %w", u, err, apiErr)
}

// download GETs u; status is the HTTP status when a response arrived.
func (g *githubSource) download(ctx context.Context, u string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := g.http.Do(req)
	if err != nil {
		var te *TruncatedError
		if errors.As(err, &te) {
			return nil, 0, te
		}
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if isRateLimited(resp) {
			return nil, resp.StatusCode, rateLimitFromHeaders("downloading "+u, resp.Header)
		}
		return nil, resp.StatusCode, fmt.Errorf("server answered %s", resp.Status)
	}
	data, err := readLimited(resp.Body)
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("reading %s: %w", u, err)
	}
	return data, resp.StatusCode, nil
}

func (g *githubSource) release(ctx context.Context, version string) (*github.RepositoryRelease, error) {
	g.mu.Lock()
	r := g.releases[version]
	g.mu.Unlock()
	if r != nil {
		return r, nil
	}
	r, _, err := g.gh.Repositories.GetReleaseByTag(ctx, g.owner, g.repo, version)
	if err != nil {
		return nil, githubError(fmt.Sprintf("getting release %s of %s/%s", version, g.owner, g.repo), err)
	}
	g.mu.Lock()
	if g.releases == nil {
		g.releases = map[string]*github.RepositoryRelease{}
	}
	g.releases[version] = r
	g.mu.Unlock()
	return r, nil
}

func (g *githubSource) getFileByAPI(ctx context.Context, version, file string) ([]byte, error) {
	r, err := g.release(ctx, version)
	if err != nil {
		return nil, err
	}
	name := g.asset(file)
	var id int64
	for _, a := range r.Assets {
		if a.GetName() == name {
			id = a.GetID()
			break
		}
	}
	if id == 0 {
		return nil, fmt.Errorf("release %s of %s/%s has no asset %s: %w", version, g.owner, g.repo, name, ErrNotFound)
	}
	rc, _, err := g.gh.Repositories.DownloadReleaseAsset(ctx, g.owner, g.repo, id, g.http)
	if err != nil {
		return nil, githubError(fmt.Sprintf("downloading asset %s of release %s of %s/%s", name, version, g.owner, g.repo), err)
	}
	defer rc.Close()
	return readLimited(rc)
}

func (g *githubSource) listFiles(ctx context.Context, version string) ([]string, error) {
	r, err := g.release(ctx, version)
	if err != nil {
		return nil, err
	}
	var out []string
	prefix := ""
	if g.rootPath != "" {
		prefix = g.rootPath + "/"
	}
	for _, a := range r.Assets {
		n := a.GetName()
		if prefix != "" {
			if !strings.HasPrefix(n, prefix) {
				continue
			}
			n = strings.TrimPrefix(n, prefix)
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

func readLimited(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("file larger than %d MiB", maxFileSize>>20)
	}
	return data, nil
}

// RateLimitError says GitHub refused a request because the rate limit is used up.
type RateLimitError struct {
	What  string    // what capctl was doing
	Reset time.Time // when the limit resets (zero if GitHub did not say)
}

func (e *RateLimitError) Error() string {
	when := "in up to an hour"
	if !e.Reset.IsZero() {
		when = fmt.Sprintf("at %s (in %s)", e.Reset.UTC().Format("15:04:05 MST"), time.Until(e.Reset).Round(time.Second))
	}
	return fmt.Sprintf("GitHub API rate limit reached while %s; it resets %s. "+
		"Either set GITHUB_TOKEN (environment, or github-token in the config file) to get a higher limit, "+
		"or work without GitHub: pin versions whose files are already in the cache, or point the provider at a local repository (see `capctl repository mirror`)",
		e.What, when)
}

func isRateLimited(resp *http.Response) bool {
	return (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests) &&
		resp.Header.Get("X-RateLimit-Remaining") == "0"
}

func rateLimitFromHeaders(what string, h http.Header) *RateLimitError {
	e := &RateLimitError{What: what}
	if s := h.Get("X-RateLimit-Reset"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			e.Reset = time.Unix(n, 0)
		}
	}
	return e
}

// githubError turns go-github errors into capctl's: rate limits, not-found, bad credentials.
func githubError(what string, err error) error {
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		return &RateLimitError{What: what, Reset: rl.Rate.Reset.Time}
	}
	var abuse *github.AbuseRateLimitError
	if errors.As(err, &abuse) {
		e := &RateLimitError{What: what}
		if abuse.RetryAfter != nil {
			e.Reset = time.Now().Add(*abuse.RetryAfter)
		}
		return e
	}
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch {
		case isRateLimited(er.Response):
			return rateLimitFromHeaders(what, er.Response.Header)
		case er.Response.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%s: %w", what, ErrNotFound)
		case er.Response.StatusCode == http.StatusUnauthorized:
			return fmt.Errorf("%s: GitHub rejected the credentials (401); check GITHUB_TOKEN", what)
		default:
			return fmt.Errorf("%s: GitHub answered %d: %s", what, er.Response.StatusCode, er.Message)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// retryTransport retries GET requests that fail for a moment (cluster.IsTransient: network
// errors, a body cut short, 5xx answers) with exponential backoff; other answers (4xx, a spent
// rate limit) are final and returned at once. After the last attempt a transient answer is
// returned as it is, so the caller reports the status.
type retryTransport struct {
	base     http.RoundTripper
	attempts int
	backoff  time.Duration
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return base.RoundTrip(req)
	}
	var resp *http.Response // the last answer, kept open in case it stays the last
	attempts := 0
	err := cluster.Retry(req.Context(), cluster.Backoff{Initial: t.backoff, Factor: 2, Attempts: t.attempts}, func() error {
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			resp = nil
		}
		attempts++
		r, err := base.RoundTrip(req)
		if err != nil {
			return err
		}
		if r.StatusCode == http.StatusOK && req.Method == http.MethodGet {
			// A body cut short is as transient as a refused connection: read it here, where a
			// retry is still possible.
			if err := bufferBody(req, r); err != nil {
				return cluster.Again(err)
			}
		}
		resp = r
		if cluster.IsTransientStatus(r.StatusCode) && !isRateLimited(r) {
			return cluster.Again(fmt.Errorf("server answered %s", r.Status))
		}
		return nil
	})
	var te *TruncatedError
	if errors.As(err, &te) {
		te.Attempts = attempts
	}
	switch {
	case err == nil:
		return resp, nil
	case req.Context().Err() != nil:
		if resp != nil {
			resp.Body.Close()
		}
		return nil, err
	case resp != nil:
		return resp, nil // the last attempt's transient answer
	case te != nil:
		return nil, err
	case attempts > 1:
		return nil, fmt.Errorf("failed after %d attempts: %w", attempts, err)
	}
	return nil, err
}

// TruncatedError is a download whose connection closed before the whole body arrived.
type TruncatedError struct {
	URL      string
	Got      int64
	Want     int64 // Content-Length; -1 when the server did not say
	Attempts int
	Err      error
}

func (e *TruncatedError) Error() string {
	msg := fmt.Sprintf("download of %s was cut after %d of %d bytes", e.URL, e.Got, e.Want)
	if e.Want < 0 {
		msg = fmt.Sprintf("download of %s was cut after %d bytes (%v)", e.URL, e.Got, e.Err)
	}
	if e.Attempts > 1 {
		msg += fmt.Sprintf(", %d times in a row: the connection or a proxy on the way drops it; try again later", e.Attempts)
	}
	return msg
}

func (e *TruncatedError) Unwrap() error { return e.Err }

// bufferBody reads a 200 answer's body into memory (files are bounded by maxFileSize) and checks
// it against Content-Length; the response then carries the complete body.
func bufferBody(req *http.Request, resp *http.Response) error {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxFileSize+1))
	resp.Body.Close()
	got := int64(len(data))
	if err == nil && resp.ContentLength >= 0 && got < resp.ContentLength && got <= maxFileSize {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return &TruncatedError{URL: req.URL.Redacted(), Got: got, Want: resp.ContentLength, Attempts: 1, Err: err}
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	return nil
}

// proxyVersions lists tags through the Go module proxy protocol, costing no GitHub API call:
// {proxy}/github.com/OWNER/REPO/@v/list, then /v2/@v/list, /v3/... until one is missing. Tags
// without a published release show up here; resolution skips them when their metadata.yaml is
// missing.
func (g *githubSource) proxyVersions(ctx context.Context) ([]string, error) {
	base := strings.TrimRight(g.goproxy, "/") + "/" + escapeModulePath("github.com/"+g.owner+"/"+g.repo)
	var out []string
	for major := 1; major < 100; major++ {
		u := base + "/@v/list"
		if major > 1 {
			u = fmt.Sprintf("%s/v%d/@v/list", base, major)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := g.http.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := readLimited(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone {
			if major == 1 {
				// No v0/v1 module: higher majors may still exist (a /v2 module path).
				continue
			}
			break
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %s", u, resp.Status)
		}
		if err != nil {
			return nil, err
		}
		found := false
		for _, line := range strings.Split(string(body), "\n") {
			v := strings.TrimSuffix(strings.TrimSpace(line), "+incompatible")
			if _, err := versions.Parse(v); err == nil && strings.HasPrefix(v, "v") {
				out = append(out, v)
				found = true
			}
		}
		if !found && major > 1 {
			break
		}
	}
	return out, nil
}

// escapeModulePath applies the module proxy's case encoding: an upper-case letter becomes '!'
// followed by its lower-case form.
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			b.WriteRune(r + ('a' - 'A'))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// GoProxyFromEnv interprets a GOPROXY value as clusterctl does: the first entry of a ','/'|' list;
// "off" or "direct" mean no proxy (""); empty means https://proxy.golang.org; a bare host gets
// https://.
func GoProxyFromEnv(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return "https://proxy.golang.org"
	}
	if i := strings.IndexAny(v, ",|"); i >= 0 {
		v = v[:i]
	}
	switch v {
	case "off", "direct":
		return ""
	}
	if !strings.Contains(v, "://") {
		v = "https://" + v
	}
	return v
}
