package repository

// Version resolution: the versions a provider's repository lists, and the release a request
// ("", "latest" or a pin) resolves to, with its metadata.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/versions"
)

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
