package output

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PrivateFileMode is the mode of every file capctl writes that may hold a secret (kubeconfigs,
// components and templates with substituted credentials, move backups).
const PrivateFileMode fs.FileMode = 0o600

// WritePrivateFile writes data to path so that no other user can ever read it: the bytes go to a
// temporary file in the same directory that is mode 0600 before the first byte is written, which
// then replaces path in one rename. A reader never sees a half-written file, a crash leaves the
// old file (or none), and an existing file's looser mode (0644) does not survive: the result is
// 0600 whatever was there. A symlink is followed, so the file it points at is replaced.
func WritePrivateFile(path string, data []byte) error {
	return WriteFileAtomic(path, data, PrivateFileMode)
}

// WriteFileAtomic writes data to path through a temporary file in the same directory and one
// rename, with the file's mode set to mode before the first byte is written: readers see the old
// file or the new one, never a part. Caches use it with 0644; secrets go through WritePrivateFile.
func WriteFileAtomic(path string, data []byte, mode fs.FileMode) error {
	target, err := resolveTarget(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmpName := tmp.Name()
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	// CreateTemp creates 0600; the explicit chmod sets the wanted mode whatever the platform or a
	// future Go does, before any byte is written.
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("setting mode %v on %s: %w", mode, tmpName, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmpName, target); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	done = true
	return nil
}

// resolveTarget follows a symlink at path and refuses a directory.
func resolveTarget(path string) (string, error) {
	if path == "" {
		return "", errors.New("no file name given")
	}
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return filepath.Clean(path), nil
	case err != nil:
		return "", fmt.Errorf("writing %s: %w", path, err)
	case st.Mode()&fs.ModeSymlink != 0:
		real, err := filepath.EvalSymlinks(path)
		if errors.Is(err, fs.ErrNotExist) {
			// A dangling link: create the file it names.
			dest, rerr := os.Readlink(path)
			if rerr != nil {
				return "", fmt.Errorf("writing %s: %w", path, rerr)
			}
			if !filepath.IsAbs(dest) {
				dest = filepath.Join(filepath.Dir(path), dest)
			}
			return resolveTarget(dest)
		}
		if err != nil {
			return "", fmt.Errorf("writing %s: %w", path, err)
		}
		return resolveTarget(real)
	case st.IsDir():
		return "", fmt.Errorf("writing %s: it is a directory; give a file name", path)
	}
	return filepath.Clean(path), nil
}
