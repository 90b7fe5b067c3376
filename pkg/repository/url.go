package repository

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// location is a parsed provider URL.
type location struct {
	kind   string // "github", "gitlab", "local" or "oci"
	scheme string

	// GitHub: owner/repo, the version named in the URL ("latest" or a tag), the folder inside the
	// release (usually empty) and the components file name. GitLab: owner is the project (as
	// escaped in the URL), repo the package name.
	host, owner, repo string

	// Local: the base path holding {provider-label}/{version}/{file}.
	basePath string
	label    string

	// OCI: host is the registry (host[:port]), repoPath the repository inside it
	// (project/manifests/infrastructure-docker), digest a pinned manifest digest ("" for none).
	repoPath, digest string

	version  string // "latest" or a tag such as v1.14.0
	rootPath string // folder of the components file inside the version (GitHub assets may sit in one)
	file     string // components file name
}

// ErrPathEscape is returned (wrapped) when a path, version or file name tries to leave its base folder.
var ErrPathEscape = errors.New("path escapes the repository folder")

// parseLocation parses a provider URL: a GitHub release URL, a file:// URL or an absolute path.
func parseLocation(raw string) (*location, error) {
	if raw == "" {
		return nil, errors.New("empty repository URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("repository URL %q: %w", raw, err)
	}
	switch {
	case u.Scheme == "https" || u.Scheme == "http":
		switch {
		case u.Host == "github.com" || strings.HasPrefix(u.Host, "github."):
			return parseGitHub(u, raw)
		case strings.HasPrefix(u.Host, "gitlab."):
			return parseGitLab(u, raw)
		}
		return nil, fmt.Errorf("repository URL %q: only GitHub release URLs (https://github.com/OWNER/REPO/releases/{latest|vX.Y.Z}/FILE), GitLab package URLs (https://gitlab.HOST/api/v4/projects/...), oci:// references, file:// URLs and absolute paths are supported", raw)
	case u.Scheme == "oci":
		return parseOCI(u, raw)
	case u.Scheme == "file":
		p := u.Path
		if u.Host != "" && u.Host != "localhost" {
			// file://relative/path is a mistake users make; say so.
			return nil, fmt.Errorf("repository URL %q: a file URL needs an absolute path (file:///abs/path/...)", raw)
		}
		return parseLocal(p, raw)
	case u.Scheme == "" || (len(u.Scheme) == 1 && runtime.GOOS == "windows"):
		return parseLocal(raw, raw)
	default:
		return nil, fmt.Errorf("repository URL %q: scheme %q is not supported (use https://github.com/..., oci://, file:// or an absolute path)", raw, u.Scheme)
	}
}

func parseGitHub(u *url.URL, raw string) (*location, error) {
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(segs) < 5 || segs[2] != "releases" {
		return nil, fmt.Errorf("repository URL %q: a GitHub repository URL must look like https://github.com/OWNER/REPO/releases/{latest|vX.Y.Z}/FILE", raw)
	}
	for _, s := range segs {
		if s == ".." || s == "." || s == "" {
			return nil, fmt.Errorf("repository URL %q: %w", raw, ErrPathEscape)
		}
	}
	l := &location{kind: "github", host: u.Host, owner: segs[0], repo: segs[1], version: segs[3]}
	rest := segs[4:]
	l.file = rest[len(rest)-1]
	l.rootPath = strings.Join(rest[:len(rest)-1], "/")
	return l, nil
}

func parseLocal(p, raw string) (*location, error) {
	p = filepath.ToSlash(p)
	if runtime.GOOS == "windows" {
		p = strings.TrimPrefix(p, "/") // /C:/repo -> C:/repo
	}
	// Reject ".." anywhere: a repository URL never needs it, and it could leave the base folder.
	for _, s := range strings.Split(p, "/") {
		if s == ".." {
			return nil, fmt.Errorf("repository path %q: %w (\"..\" is not allowed)", raw, ErrPathEscape)
		}
	}
	if !filepath.IsAbs(filepath.FromSlash(p)) {
		return nil, fmt.Errorf("repository path %q must be absolute ({basepath}/{provider-label}/{version}/{file})", raw)
	}
	clean := path.Clean(p)
	segs := strings.Split(strings.Trim(clean, "/"), "/")
	if len(segs) < 3 {
		return nil, fmt.Errorf("repository path %q: a local repository path must look like {basepath}/{provider-label}/{version|latest}/{file}", raw)
	}
	n := len(segs)
	l := &location{
		kind:     "local",
		file:     segs[n-1],
		version:  segs[n-2],
		label:    segs[n-3],
		basePath: filepath.FromSlash(path.Dir(path.Dir(path.Dir(clean)))),
	}
	if runtime.GOOS != "windows" && !strings.HasPrefix(l.basePath, "/") {
		l.basePath = "/" + l.basePath
	}
	return l, nil
}

// safeJoin joins elems under base and refuses results outside base (".." escapes, absolute parts).
func safeJoin(base string, elems ...string) (string, error) {
	for _, e := range elems {
		if e == "" {
			continue
		}
		for _, s := range strings.FieldsFunc(e, func(r rune) bool { return r == '/' || r == '\\' }) {
			if s == ".." {
				return "", fmt.Errorf("%q: %w", e, ErrPathEscape)
			}
		}
		if filepath.IsAbs(e) || strings.HasPrefix(e, "/") {
			return "", fmt.Errorf("%q: %w (absolute path)", e, ErrPathEscape)
		}
	}
	joined := filepath.Join(append([]string{base}, elems...)...)
	rel, err := filepath.Rel(base, joined)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q: %w", strings.Join(elems, "/"), ErrPathEscape)
	}
	return joined, nil
}
