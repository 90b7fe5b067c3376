package userinput

import (
	"fmt"
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
