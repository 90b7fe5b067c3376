package repository

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// CacheCleanResult says what CleanCache removed.
type CacheCleanResult struct {
	// Dir is the cache folder.
	Dir string `json:"dir"`
	// Removed are the files and folders deleted.
	Removed []string `json:"removed"`
	// Files and Bytes count the cached files removed (version lists included, checksums not).
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// SharedWith names the other providers whose files come from the same repository, and were
	// therefore removed too (the Cluster API providers share one GitHub repository).
	SharedWith []string `json:"sharedWith,omitempty"`
	// Note explains an empty result (a local repository is never cached).
	Note string `json:"note,omitempty"`
}

// CacheDir is the disk cache folder, or "" when the cache is disabled.
func (c *Client) CacheDir() string {
	if c.cache == nil {
		return ""
	}
	return c.cache.dir
}

// CleanCache removes cached files: of one version of p's repository, of every version of it (and
// its version list) when version is "", or the whole cache when p is nil. Files are fetched again
// when next needed. The cache is keyed by repository, so providers that share p's repository lose
// their cached files of that version too; the result names them.
func (c *Client) CleanCache(p *Provider, version string) (*CacheCleanResult, error) {
	if c.cache == nil {
		return nil, errors.New("the disk cache is disabled for this run")
	}
	res := &CacheCleanResult{Dir: c.cache.dir, Removed: []string{}}
	if p == nil {
		entries, err := os.ReadDir(c.cache.dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("reading the cache %s: %w", c.cache.dir, err)
		}
		for _, e := range entries {
			if err := res.remove(filepath.Join(c.cache.dir, e.Name())); err != nil {
				return res, err
			}
		}
		return res, nil
	}
	s, _, err := c.source(*p)
	if err != nil {
		return nil, err
	}
	key := s.cacheKey()
	if key == "" {
		res.Note = fmt.Sprintf("%s is read from a local repository (%s), which is never cached", p, s)
		return res, nil
	}
	if version != "" && !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	var targets []string
	if version != "" {
		dir, err := safeJoin(filepath.Join(c.cache.dir, "files"), key, version)
		if err != nil {
			return nil, err
		}
		targets = append(targets, dir)
	} else {
		dir, err := safeJoin(filepath.Join(c.cache.dir, "files"), key)
		if err != nil {
			return nil, err
		}
		vl, err := c.cache.versionsPath(key)
		if err != nil {
			return nil, err
		}
		targets = append(targets, dir, vl)
		c.mu.Lock()
		delete(c.versions, p.URL)
		delete(c.listed, p.URL)
		c.mu.Unlock()
	}
	for _, t := range targets {
		if err := res.remove(t); err != nil {
			return res, err
		}
	}
	prefix := p.URL + "|"
	if version != "" {
		prefix += version + "|"
	}
	c.mu.Lock()
	for k := range c.files {
		if strings.HasPrefix(k, prefix) {
			delete(c.files, k)
		}
	}
	c.mu.Unlock()
	for _, other := range c.registry.List() {
		if other.URL == p.URL && other.Name == p.Name && other.Type == p.Type {
			continue
		}
		if o, _, err := c.source(other); err == nil && o.cacheKey() == key {
			res.SharedWith = append(res.SharedWith, other.ManifestLabel())
		}
	}
	sort.Strings(res.SharedWith)
	return res, nil
}

// remove deletes path (a file or a folder) and counts what was in it; a missing path is fine.
func (r *CacheCleanResult) remove(path string) error {
	found := false
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		found = true
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			if info, err := d.Info(); err == nil {
				r.Files++
				r.Bytes += info.Size()
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if !found {
		return nil
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	r.Removed = append(r.Removed, path)
	return nil
}
