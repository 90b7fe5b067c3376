package userinput

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ExpandPaths lists the files of -f paths: files as given (and "-", standard input), directories
// walked for regular *.yaml/*.yml files in name order, hidden subdirectories skipped.
func ExpandPaths(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		if p == "-" {
			files = append(files, p)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(fp string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if fp != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if ext := filepath.Ext(fp); (ext == ".yaml" || ext == ".yml") && d.Type().IsRegular() {
				found = append(found, fp)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walking %s: %w", p, err)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

// ErrNoStdin is ReadPath's answer for "-" when the command has no standard input to read.
var ErrNoStdin = errors.New("no standard input: give a file or directory, or pipe YAML into standard input")

// ReadPath reads one path ExpandPaths listed: "-" from stdin, a file from disk, both bounded by
// the input limit (--max-input-size).
func ReadPath(ctx context.Context, path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		if stdin == nil {
			return nil, ErrNoStdin
		}
		return ReadAll(ctx, stdin, "standard input")
	}
	return ReadFile(ctx, path)
}
