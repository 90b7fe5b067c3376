package repository

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/userinput"
)

// diskCache keeps fetched files under {dir}/files/{repository}/{version}/{file} and version lists
// under {dir}/versions/{repository}.json. Release files never change once published, so files are
// kept forever; version lists carry their fetch time and expire after the TTL. Only files that
// passed validateFile are written (atomically), each with a hidden .{file}.sha256 beside it, so a
// cached file is trusted without parsing it again.
type diskCache struct {
	dir string
}

func (c *diskCache) filePath(key, version, file string) (string, error) {
	return safeJoin(filepath.Join(c.dir, "files"), key, version, file)
}

// getFile returns a cached file and its path. The file is checked against the checksum sidecar
// written beside it when it was cached, after it passed validateFile. A file whose sidecar does not
// match, or that has none, is bad, whatever it looks like: a cut at a document boundary is still
// valid YAML and would install a provider without its last objects, and a file whose sidecar went
// missing cannot be told from one cut after it was cached, so parsing it again would re-bless a cut
// file. bad is the reason a file cannot be used; the caller fetches it again, or names it offline.
// Reads are bounded (userinput.Max): a cache entry replaced by an endless file is not read to the end.
func (c *diskCache) getFile(key, version, file string) (data []byte, path string, bad error, ok bool) {
	if c == nil || key == "" {
		return nil, "", nil, false
	}
	p, err := c.filePath(key, version, file)
	if err != nil {
		return nil, "", nil, false
	}
	b, err := userinput.ReadFile(context.Background(), p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil, false
	} else if err != nil {
		return nil, p, fmt.Errorf("it cannot be read: %w", err), true
	}
	sum := checksum(b)
	side, err := userinput.ReadFileLimit(context.Background(), sidecarPath(p), 1<<10, "")
	switch {
	case err == nil && strings.TrimSpace(string(side)) == sum:
		return b, p, nil, true
	case err == nil:
		return b, p, fmt.Errorf("its SHA-256 is %s but it was cached with %s: the file changed after it was cached", sum, strings.TrimSpace(string(side))), true
	case userinput.IsTooLarge(err):
		return b, p, fmt.Errorf("its checksum file %s is longer than a checksum", sidecarPath(p)), true
	case errors.Is(err, fs.ErrNotExist):
		return b, p, fmt.Errorf("it has no checksum beside it (%s), so it cannot be told from a file cut or changed after it was cached", sidecarPath(p)), true
	default:
		return b, p, fmt.Errorf("its checksum %s cannot be read: %w", sidecarPath(p), err), true
	}
}

// removeFile drops a cached file and its sidecar.
func (c *diskCache) removeFile(p string) {
	_ = os.Remove(p)
	_ = os.Remove(sidecarPath(p))
}

// sidecarPath is where the SHA-256 of a validated cached file is kept: a hidden file beside it.
func sidecarPath(p string) string {
	return filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".sha256")
}

func checksum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
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
	if err := writeFileAtomic(p, data, 0o644); err != nil {
		return err
	}
	return writeFileAtomic(sidecarPath(p), []byte(checksum(data)+"\n"), 0o644)
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
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
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
	b, err := userinput.ReadFileLimit(context.Background(), p, 16<<20, "") // a version list is kilobytes
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
	return output.WriteFileAtomic(p, data, mode)
}
