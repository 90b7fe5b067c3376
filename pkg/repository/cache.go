package repository

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// diskCache keeps fetched files under {dir}/files/{repository}/{version}/{file} and version lists
// under {dir}/versions/{repository}.json. Release files never change once published, so files are
// kept forever; version lists carry their fetch time and expire after the TTL.
type diskCache struct {
	dir string
}

func (c *diskCache) filePath(key, version, file string) (string, error) {
	return safeJoin(filepath.Join(c.dir, "files"), key, version, file)
}

func (c *diskCache) getFile(key, version, file string) ([]byte, bool) {
	if c == nil || key == "" {
		return nil, false
	}
	p, err := c.filePath(key, version, file)
	if err != nil {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	return b, true
}

func (c *diskCache) hasFile(key, version, file string) bool {
	if c == nil || key == "" {
		return false
	}
	p, err := c.filePath(key, version, file)
	if err != nil {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func (c *diskCache) putFile(key, version, file string, data []byte) error {
	if c == nil || key == "" {
		return nil
	}
	p, err := c.filePath(key, version, file)
	if err != nil {
		return err
	}
	return writeFileAtomic(p, data, 0o644)
}

// listFiles names the cached files of a version.
func (c *diskCache) listFiles(key, version string) []string {
	if c == nil || key == "" {
		return nil
	}
	dir, err := safeJoin(filepath.Join(c.dir, "files"), key, version)
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out
}

type cachedVersions struct {
	Fetched  time.Time `json:"fetched"`
	Versions []string  `json:"versions"`
	// Unpublished are listed versions found to have no metadata.yaml (tag without a published
	// release); they are skipped while the list is trusted.
	Unpublished []string `json:"unpublished,omitempty"`
}

func (c *diskCache) versionsPath(key string) (string, error) {
	return safeJoin(filepath.Join(c.dir, "versions"), key+".json")
}

func (c *diskCache) getVersions(key string) (*cachedVersions, bool) {
	if c == nil || key == "" {
		return nil, false
	}
	p, err := c.versionsPath(key)
	if err != nil {
		return nil, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	var cv cachedVersions
	if json.Unmarshal(b, &cv) != nil {
		return nil, false
	}
	return &cv, true
}

func (c *diskCache) putVersions(key string, cv cachedVersions) error {
	if c == nil || key == "" {
		return nil
	}
	p, err := c.versionsPath(key)
	if err != nil {
		return err
	}
	b, err := json.Marshal(cv)
	if err != nil {
		return err
	}
	return writeFileAtomic(p, b, 0o644)
}

// writeFileAtomic writes through a temporary file and a rename, so a crash or a concurrent run
// never leaves a half-written file behind.
func writeFileAtomic(p string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(p), err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-"+filepath.Base(p)+"-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), mode)
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}
