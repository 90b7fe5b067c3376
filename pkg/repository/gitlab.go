package repository

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/capctl/capctl/pkg/versions"
)

// gitlabSource is a GitLab generic package registry:
// https://gitlab.HOST/api/v4/projects/{project}/packages/generic/{package}/{version}/{file}.
// It cannot list versions (the version in the URL is the only one, as in clusterctl), so upgrades
// and other versions must be named in the URL. GITLAB_ACCESS_TOKEN (env or the config's
// gitlab-access-token) is sent as a Bearer token.
type gitlabSource struct {
	http    *http.Client // adds GITLAB_ACCESS_TOKEN, over HTTPS to this host only
	scheme  string
	host    string
	project string // as in the URL (an id or a %2F-escaped path)
	pkg     string
	version string
}

func (g *gitlabSource) String() string {
	return fmt.Sprintf("GitLab package %s of project %s on %s", g.pkg, g.project, g.host)
}

func (g *gitlabSource) cacheKey() string {
	project, err := url.PathUnescape(g.project)
	if err != nil {
		project = g.project
	}
	return path.Join("gitlab", g.host, strings.ReplaceAll(project, "/", "_"), g.pkg)
}

func (g *gitlabSource) fileURL(version, file string) string {
	return fmt.Sprintf("%s://%s/api/v4/projects/%s/packages/generic/%s/%s/%s", g.scheme, g.host, g.project, url.PathEscape(g.pkg), url.PathEscape(version), url.PathEscape(file))
}

func (g *gitlabSource) versions(context.Context) ([]string, error) {
	if _, err := versions.Parse(g.version); err != nil {
		return nil, fmt.Errorf("%s: a GitLab package URL must name a version (GitLab packages cannot be listed), not %q", g, g.version)
	}
	return []string{g.version}, nil
}

func (g *gitlabSource) getFile(ctx context.Context, version, file string) ([]byte, error) {
	u := g.fileURL(version, file)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := g.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return readLimited(resp.Body)
	case http.StatusNotFound:
		return nil, fmt.Errorf("%s: %w", u, ErrNotFound)
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, fmt.Errorf("%s: unauthorized access (%s), please check your credentials (GITLAB_ACCESS_TOKEN, or gitlab-access-token in the config file)", u, resp.Status)
	default:
		return nil, fmt.Errorf("%s: server answered %s", u, resp.Status)
	}
}

// listFiles is not offered by the generic package API without more calls; mirrors of GitLab
// providers carry their components and metadata only.
func (g *gitlabSource) listFiles(context.Context, string) ([]string, error) { return nil, nil }

// parseGitLab parses /api/v4/projects/{project}/packages/generic/{package}/{version}/{file}.
func parseGitLab(u *url.URL, raw string) (*location, error) {
	segs := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	if len(segs) != 9 || segs[0] != "api" || segs[1] != "v4" || segs[2] != "projects" || segs[4] != "packages" || segs[5] != "generic" {
		return nil, fmt.Errorf("repository URL %q: a GitLab repository URL must look like https://gitlab.HOST/api/v4/projects/{project}/packages/generic/{package}/{version}/{file}", raw)
	}
	for _, s := range segs {
		if s == ".." || s == "." || s == "" {
			return nil, fmt.Errorf("repository URL %q: %w", raw, ErrPathEscape)
		}
	}
	unesc := func(s string) string {
		if v, err := url.PathUnescape(s); err == nil {
			return v
		}
		return s
	}
	return &location{kind: "gitlab", scheme: u.Scheme, host: u.Host, owner: segs[3], repo: unesc(segs[6]), version: unesc(segs[7]), file: unesc(segs[8])}, nil
}
