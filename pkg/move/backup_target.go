package move

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// backupTarget is what checkBackupTarget found at a backup's destination.
type backupTarget struct {
	dir string
	// previous is a complete earlier backup of the same scope and source in dir, replaced when
	// the new one is complete.
	previous *Manifest
}

// checkBackupTarget checks, before anything is paused, that a backup can be written to dir: dir
// is not a symbolic link, its parent exists and accepts a new folder (the backup is written into
// a sibling folder and renamed into place), and dir does not exist, is empty, or holds an earlier
// complete backup of the same scope from the same source cluster (srcID).
func checkBackupTarget(ctx context.Context, dir string, scope Scope, srcID string) (*backupTarget, error) {
	t := &backupTarget{dir: dir}
	parent := filepath.Dir(dir)
	if st, err := os.Lstat(dir); err == nil && st.Mode()&os.ModeSymlink != 0 {
		real, _ := filepath.EvalSymlinks(dir)
		return nil, fmt.Errorf("the backup directory %s is a symbolic link (to %s): name the real folder", dir, real)
	} else if err == nil && !st.IsDir() {
		return nil, fmt.Errorf("the backup directory %s exists and is not a directory", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the backup directory %s: %w", dir, err)
	}
	pst, err := os.Stat(parent)
	if err != nil {
		return nil, fmt.Errorf("the backup directory's parent: %w (create it first)", err)
	}
	if !pst.IsDir() {
		return nil, fmt.Errorf("the backup directory's parent %s is not a directory", parent)
	}
	probe, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".capctl-probe-")
	if err != nil {
		return nil, fmt.Errorf("the backup directory's parent %s does not accept a new folder: %w", parent, err)
	}
	_ = os.Remove(probe)
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return t, nil
	case err != nil:
		return nil, fmt.Errorf("reading the backup directory: %w", err)
	case len(entries) == 0:
		return t, nil
	}
	man, _, rerr := ReadBackup(ctx, dir, 0)
	if rerr != nil {
		return nil, fmt.Errorf("the backup directory %s is not empty (%d entries) and does not hold a capctl backup: choose an empty or new directory", dir, len(entries))
	}
	if man.Source.ClusterID != srcID || !sameScope(man.Scope, scope) {
		return nil, fmt.Errorf("the backup directory %s holds a backup of %s from %s (cluster %s), not of %s from this cluster: choose an empty or new directory",
			dir, man.Scope, man.Source.Server, man.Source.ClusterID, scope)
	}
	t.previous = man
	return t, nil
}

// install puts the finished backup (in partial) at the target: a rename replaces a missing or
// empty folder in one step; an earlier backup is first set aside, then removed.
func (t *backupTarget) install(partial, moveID string) error {
	if t.previous == nil {
		return os.Rename(partial, t.dir)
	}
	old := previousDir(t.dir, moveID)
	if err := os.Rename(t.dir, old); err != nil {
		return fmt.Errorf("setting the previous backup aside: %w", err)
	}
	if err := os.Rename(partial, t.dir); err != nil {
		_ = os.Rename(old, t.dir)
		return err
	}
	return os.RemoveAll(old)
}

// previousDir is where an earlier backup waits while the new one is renamed into place.
func previousDir(dir, moveID string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".capctl-previous-"+moveID)
}

// restorePrevious puts back an earlier backup that an interrupted run had set aside, unless the
// new backup took its place (then the set-aside copy is removed).
func restorePrevious(dir, moveID string) {
	old := previousDir(dir, moveID)
	if _, err := os.Lstat(old); err != nil {
		return
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		_ = os.Rename(old, dir)
		return
	}
	_ = os.RemoveAll(old)
}
