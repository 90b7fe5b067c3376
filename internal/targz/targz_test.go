package targz

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/userinput"
)

func TestWriteIsDeterministicAndReadsBack(t *testing.T) {
	files := []File{{Name: "b.yaml", Data: []byte("b: 1\n")}, {Name: "dir/a.yaml", Data: []byte("a: 2\n")}}
	one, err := Write(files, 0o644, time.Unix(0, 0), gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	two, _ := Write(files, 0o644, time.Unix(0, 0), gzip.BestCompression)
	if !bytes.Equal(one, two) {
		t.Fatal("the same files gave different archives")
	}
	var got []string
	err = Read(context.Background(), bytes.NewReader(one), "test", 1<<20, func(name string, data []byte) error {
		got = append(got, name+"="+string(data))
		return nil
	})
	if err != nil || strings.Join(got, ",") != "b.yaml=b: 1\n,dir/a.yaml=a: 2\n" {
		t.Fatalf("%q %v", got, err)
	}
}

func rawArchive(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

func TestReadRefusesWhatNoWriterMakes(t *testing.T) {
	each := func(string, []byte) error { return nil }
	for name, h := range map[string]*tar.Header{
		"escape":   {Name: "../etc/passwd", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		"absolute": {Name: "/etc/passwd", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		"symlink":  {Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd", Mode: 0o777},
	} {
		err := Read(context.Background(), bytes.NewReader(rawArchive(t, h)), "test", 1<<20, each)
		if err == nil || !strings.Contains(err.Error(), "not a plain file") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// "./" and folders, as other archivers write them, are fine.
	var got []string
	err := Read(context.Background(), bytes.NewReader(rawArchive(t,
		&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		&tar.Header{Name: "./metadata.yaml", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644})), "test", 1<<20,
		func(n string, _ []byte) error { got = append(got, n); return nil })
	if err != nil || len(got) != 1 || got[0] != "metadata.yaml" {
		t.Errorf("%v %v", got, err)
	}
	// Bounded: a file larger than the limit is not read to its end.
	err = Read(context.Background(), bytes.NewReader(rawArchive(t, &tar.Header{Name: "big", Typeflag: tar.TypeReg, Size: 4096, Mode: 0o644})), "test", 1024, each)
	if !userinput.IsTooLarge(err) {
		t.Errorf("over the limit: %v", err)
	}
	if err := Read(context.Background(), strings.NewReader("plain text"), "test", 1024, each); !errors.Is(err, ErrNotGzip) {
		t.Errorf("not gzip: %v", err)
	}
}
