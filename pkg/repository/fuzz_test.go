package repository

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseLocation checks that no provider URL crashes the parser, that an accepted local URL
// never carries a ".." segment, and that files joined under an accepted location stay inside it.
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{
		"https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml",
		"https://github.com/o/r/releases/v1.2.3/sub/dir/file.yaml",
		"file:///repo/cluster-api/latest/core-components.yaml",
		"/repo/infrastructure-aws/v2.0.0/infrastructure-components.yaml",
		"/repo/../etc/cluster-api/latest/x.yaml",
		"file://host/x", "https://github.com/o/r/releases//x", "%zz", "",
	} {
		f.Add(s, "metadata.yaml")
	}
	f.Fuzz(func(t *testing.T, raw, file string) {
		loc, err := parseLocation(raw)
		if err != nil {
			return
		}
		if loc.file == "" || loc.version == "" {
			t.Fatalf("%q: accepted without file or version: %+v", raw, loc)
		}
		if loc.kind == "local" {
			for _, seg := range strings.Split(filepath.ToSlash(loc.basePath), "/") {
				if seg == ".." {
					t.Fatalf("%q: base path %q has ..", raw, loc.basePath)
				}
			}
			if loc.label == ".." || loc.version == ".." {
				t.Fatalf("%q: escaping segment accepted: %+v", raw, loc)
			}
			base := filepath.Join(loc.basePath, loc.label)
			if p, err := safeJoin(base, loc.version, file); err == nil {
				rel, rerr := filepath.Rel(base, p)
				if rerr != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					t.Fatalf("safeJoin(%q, %q, %q) = %q escapes", base, loc.version, file, p)
				}
			}
		}
	})
}

// FuzzParseYAML checks that any text either parses or fails with an error naming the file and a
// line, and never panics.
func FuzzParseYAML(f *testing.F) {
	f.Add("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n")
	f.Add("<html>\n</html>\n")
	f.Add("---\n---\n# c\n")
	f.Fuzz(func(t *testing.T, text string) {
		objs, err := ParseYAML("f.yaml", []byte(text))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml: line ") {
				t.Fatalf("error without file and line: %v", err)
			}
			return
		}
		for _, o := range objs {
			if o.GetKind() == "" || o.GetAPIVersion() == "" {
				t.Fatalf("object without kind/apiVersion accepted: %v", o.Object)
			}
		}
	})
}
