// Package targz is capctl's one way to write and read gzipped tar archives of flat or nested
// files: support bundles and OCI provider artifacts. Writing is deterministic (the caller's order,
// one mode and one time), so equal files give equal bytes; reading is bounded and accepts plain
// relative file names only, since archives come from anyone.
package targz

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/capctl/capctl/internal/userinput"
)

// File is one entry to write.
type File struct {
	Name string
	Data []byte
}

// Write archives files in their order, each regular, with mode and modTime, at the given gzip
// level (gzip.DefaultCompression, gzip.BestCompression, ...).
func Write(files []File, mode int64, modTime time.Time, level int) ([]byte, error) {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, f := range files {
		hdr := &tar.Header{Name: f.Name, Mode: mode, Size: int64(len(f.Data)), ModTime: modTime, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ErrNotGzip is returned (wrapped) when the input is not gzip data.
var ErrNotGzip = errors.New("not gzip data")

// Read calls each for every regular file of the gzipped tar r, in archive order, reading at most
// limit uncompressed bytes in all (the error then names name and userinput.Flag). Folder entries
// are skipped; any other kind of entry, and a name that is not a plain relative path ("./" is
// dropped), is an error.
func Read(ctx context.Context, r io.Reader, name string, limit int64, each func(file string, data []byte) error) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotGzip, err)
	}
	tr := tar.NewReader(userinput.NewLimitReader(ctx, gz, name, limit, userinput.Flag))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		file := strings.TrimPrefix(hdr.Name, "./")
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if hdr.Typeflag != tar.TypeReg || file == "" || path.IsAbs(file) || path.Clean(file) != file || strings.HasPrefix(file, "../") || file == ".." {
			return fmt.Errorf("entry %q is not a plain file", hdr.Name)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		if err := each(file, data); err != nil {
			return err
		}
	}
}
