package repository

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/versions"
)

// ErrNotFound is returned (wrapped) when a version or a file does not exist in a repository.
var ErrNotFound = errors.New("not found")

// source is one repository kind (GitHub releases, a local folder).
type source interface {
	// String names the repository in messages.
	String() string
	// versions lists the repository's versions (tags that parse as semver), in any order.
	versions(ctx context.Context) ([]string, error)
	// getFile reads file of version; a missing file or version wraps ErrNotFound.
	getFile(ctx context.Context, version, file string) ([]byte, error)
	// listFiles names the files of version (for mirroring).
	listFiles(ctx context.Context, version string) ([]string, error)
	// cacheKey identifies the repository in the disk cache; "" means "do not cache" (local files).
	cacheKey() string
	// fileURL is where file of version comes from, for messages.
	fileURL(version, file string) string
}

// localSource is clusterctl's local repository: {basePath}/{label}/{version}/{file}.
type localSource struct {
	basePath string
	label    string
}

func (l *localSource) String() string   { return filepath.Join(l.basePath, l.label) }
func (l *localSource) cacheKey() string { return "" }

func (l *localSource) fileURL(version, file string) string {
	return filepath.Join(l.basePath, l.label, version, file)
}

func (l *localSource) versions(_ context.Context) ([]string, error) {
	dir := filepath.Join(l.basePath, l.label)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("local repository %s: %w (check the provider URL)", dir, ErrNotFound)
		}
		return nil, fmt.Errorf("local repository %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := versions.Parse(e.Name()); err == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func (l *localSource) getFile(ctx context.Context, version, file string) ([]byte, error) {
	p, err := safeJoin(filepath.Join(l.basePath, l.label), version, file)
	if err != nil {
		return nil, err
	}
	b, err := userinput.ReadFile(ctx, p) // bounded: a local repository is a file a user hands us
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", p, ErrNotFound)
		}
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return b, nil
}

func (l *localSource) listFiles(_ context.Context, version string) ([]string, error) {
	dir, err := safeJoin(filepath.Join(l.basePath, l.label), version)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotFound)
		}
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}
