package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestBuiltFixturesMatchShared checks that what `make fixtures` (hack/fixtures.sh) builds from the
// Go module proxy is the folder ../shared/fixtures that the tests were written against: the same
// files under repository/ and crds/ (README.md and the licence text, which are prose, are not
// compared), and each YAML file the same set of objects (by apiVersion, kind, namespace and name,
// with deep-equal content).
//
// Which equality holds and why: the files that are plain copies of upstream files (metadata.yaml,
// CAPD's templates, cert-manager-crds.yaml, crds/*.yaml) must be byte for byte equal, since no tool
// rewrites them. The kustomize outputs (*-components.yaml) need only be equal as objects, since a
// kustomize release may change the order or layout of its output. At the time of writing every one
// of the 75 YAML files (67 in repository/, 8 in crds/) is byte for byte equal: the script runs the same kustomize versions (v5.6.0
// for v1.10, v5.7.1 after) on the same sources, with the same sed edits, and concatenates the
// CRD files in the same (file-name) order. The test logs any file that is only equal as objects.
func TestBuiltFixturesMatchShared(t *testing.T) {
	SkipShort(t, "compares the fixtures `make fixtures` built with ../shared/fixtures", "integration")
	shared := SharedFixturesDir()
	if !isDir(filepath.Join(shared, "repository")) {
		t.Skipf("no shared fixtures at %s to compare the built ones with", shared)
	}
	built := FixturesCacheDir()
	Require(t, "the fixtures hack/fixtures.sh builds, in "+built, "fixtures", FixturesBuilt(built))

	sharedFiles, builtFiles := fixtureFiles(t, shared), fixtureFiles(t, built)
	if !slices.Equal(sharedFiles, builtFiles) {
		t.Errorf("the file lists differ:\nonly in %s: %v\nonly in %s: %v",
			shared, minus(sharedFiles, builtFiles), built, minus(builtFiles, sharedFiles))
	}
	var byteEqual, objectEqual int
	for _, rel := range sharedFiles {
		if !slices.Contains(builtFiles, rel) {
			continue
		}
		a, errA := os.ReadFile(filepath.Join(shared, rel))
		b, errB := os.ReadFile(filepath.Join(built, rel))
		if err := errors.Join(errA, errB); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(a, b) {
			byteEqual++
			continue
		}
		if !strings.HasSuffix(rel, "-components.yaml") {
			t.Errorf("%s: not byte for byte equal, though it is a plain copy of an upstream file", rel)
			continue
		}
		if diff := compareObjects(a, b); diff != "" {
			t.Errorf("%s: %s", rel, diff)
			continue
		}
		objectEqual++
		t.Logf("%s: equal as objects, not byte for byte", rel)
	}
	t.Logf("%d files byte for byte equal, %d equal as objects only", byteEqual, objectEqual)
}

// fixtureFiles lists the data files under repository/ and crds/, relative to dir.
func fixtureFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, top := range []string{"repository", "crds"} {
		err := filepath.WalkDir(filepath.Join(dir, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() == "README.md" {
				return err
			}
			rel, err := filepath.Rel(dir, path)
			files = append(files, rel)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(files)
	return files
}

func minus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

// compareObjects compares two multi-document YAML files as sets of objects, keyed by apiVersion,
// kind, namespace and name; it returns "" when they are equal, else what differs.
func compareObjects(a, b []byte) string {
	objsA, err := yamlObjects(a)
	if err != nil {
		return "shared: " + err.Error()
	}
	objsB, err := yamlObjects(b)
	if err != nil {
		return "built: " + err.Error()
	}
	var diffs []string
	for k, oa := range objsA {
		ob, ok := objsB[k]
		switch {
		case !ok:
			diffs = append(diffs, "missing from the built file: "+k)
		case !reflect.DeepEqual(oa, ob):
			diffs = append(diffs, "differs: "+k)
		}
	}
	for k := range objsB {
		if _, ok := objsA[k]; !ok {
			diffs = append(diffs, "only in the built file: "+k)
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

func yamlObjects(data []byte) (map[string]map[string]any, error) {
	objs := map[string]map[string]any{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var o map[string]any
		if err := dec.Decode(&o); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(o) == 0 {
			continue
		}
		md, _ := o["metadata"].(map[string]any)
		key := fmt.Sprintf("%v/%v %v/%v", o["apiVersion"], o["kind"], md["namespace"], md["name"])
		for n := 2; objs[key] != nil; n++ { // the same key twice: keep both, in order
			key = fmt.Sprintf("%s #%d", strings.SplitN(key, " #", 2)[0], n)
		}
		objs[key] = o
	}
}

// TestCompareObjects checks the object comparison itself on small documents.
func TestCompareObjects(t *testing.T) {
	a := []byte("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n")
	reordered := []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n---\n# a comment\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n")
	if d := compareObjects(a, reordered); d != "" {
		t.Errorf("reordered documents: %s", d)
	}
	changed := []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n  labels: {x: y}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: c\n")
	want := "differs: v1/Namespace <nil>/a; missing from the built file: v1/Namespace <nil>/b; only in the built file: v1/Namespace <nil>/c"
	if d := compareObjects(a, changed); d != want {
		t.Errorf("got %q, want %q", d, want)
	}
}

// TestFixturesDirOrder checks where FixturesDir looks: $CAPCTL_FIXTURES first, and the built cache
// only once hack/fixtures.sh marked it complete.
func TestFixturesDirOrder(t *testing.T) {
	explicit := t.TempDir()
	if err := os.MkdirAll(filepath.Join(explicit, "repository"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAPCTL_FIXTURES", explicit)
	if d, _ := findFixtures(); d != explicit {
		t.Errorf("with CAPCTL_FIXTURES set: got %q, want %q", d, explicit)
	}
	t.Setenv("CAPCTL_FIXTURES", filepath.Join(explicit, "nothing"))
	if d, where := findFixtures(); d != "" || !strings.Contains(where, "nothing") {
		t.Errorf("with CAPCTL_FIXTURES at an empty place: got %q (%q)", d, where)
	}

	t.Setenv("CAPCTL_FIXTURES", "")
	cache := t.TempDir()
	t.Setenv("CAPCTL_FIXTURES_CACHE", cache)
	if err := os.MkdirAll(filepath.Join(cache, "repository"), 0o755); err != nil {
		t.Fatal(err)
	}
	if FixturesBuilt(cache) {
		t.Error("a cache without .stamps/complete (a killed build) counts as built")
	}
	if err := os.MkdirAll(filepath.Join(cache, ".stamps"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, ".stamps", "complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d, where := findFixtures()
	if isDir(filepath.Join(SharedFixturesDir(), "repository")) {
		if d != SharedFixturesDir() {
			t.Errorf("the shared fixtures come before the cache: got %q", d)
		}
	} else if d != cache {
		t.Errorf("without shared fixtures the complete cache is used: got %q (%q)", d, where)
	}
}
