// Package release checks the artefacts `make release-snapshot` writes into dist/: what a platform
// team downloads must be what the checksums, the SBOMs, the krew manifest and the Homebrew cask
// say. It runs only when CAPCTL_RELEASE_DIST names that folder (`make release-check` sets it), so
// `make test` never depends on a release build.
package release

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// artifact is one entry of goreleaser's dist/artifacts.json.
type artifact struct {
	Name   string         `json:"name"`
	Path   string         `json:"path"`
	Goos   string         `json:"goos"`
	Goarch string         `json:"goarch"`
	Type   string         `json:"type"`
	Extra  map[string]any `json:"extra"`
}

type dist struct {
	dir       string
	artifacts []artifact
	checksums map[string]string // file name -> sha256
}

func openDist(t *testing.T) *dist {
	t.Helper()
	dir := os.Getenv("CAPCTL_RELEASE_DIST")
	if dir == "" {
		t.Skip("CAPCTL_RELEASE_DIST is not set: run `make release-snapshot release-check`")
	}
	d := &dist{dir: dir, checksums: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(dir, "artifacts.json"))
	if err != nil {
		t.Fatalf("%v: run `make release-snapshot` first", err)
	}
	if err := json.Unmarshal(b, &d.artifacts); err != nil {
		t.Fatalf("artifacts.json: %v", err)
	}
	// goreleaser writes each path relative to where it ran, the folder that holds dist/.
	for i := range d.artifacts {
		if p := d.artifacts[i].Path; p != "" && !filepath.IsAbs(p) {
			d.artifacts[i].Path = filepath.Join(filepath.Dir(dir), p)
		}
	}
	f, err := os.Open(filepath.Join(dir, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			t.Fatalf("checksums.txt: line %q is not `SHA256  NAME`", sc.Text())
		}
		d.checksums[fields[1]] = fields[0]
	}
	return d
}

func (d *dist) byType(typ string) []artifact {
	var out []artifact
	for _, a := range d.artifacts {
		if a.Type == typ {
			out = append(out, a)
		}
	}
	return out
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

var platforms = []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64", "windows_arm64"}

func TestChecksumsMatchEveryArchiveAndSBOM(t *testing.T) {
	d := openDist(t)
	archives := d.byType("Archive")
	if len(archives) != len(platforms) {
		t.Fatalf("%d archives, want one per platform %v", len(archives), platforms)
	}
	listed := map[string]bool{}
	for _, a := range append(archives, d.byType("SBOM")...) {
		want, ok := d.checksums[a.Name]
		if !ok {
			t.Errorf("checksums.txt does not list %s", a.Name)
			continue
		}
		listed[a.Name] = true
		if got := sha256File(t, filepath.Join(d.dir, a.Name)); got != want {
			t.Errorf("%s: sha256 %s, checksums.txt says %s", a.Name, got, want)
		}
	}
	for name := range d.checksums {
		if !listed[name] {
			if _, err := os.Stat(filepath.Join(d.dir, name)); err != nil {
				t.Errorf("checksums.txt lists %s, which dist/ does not have", name)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(d.dir, "checksums.txt.sig")); err == nil {
		t.Log("checksums.txt is signed (checksums.txt.sig)")
	} else {
		t.Log("checksums.txt is not signed: the snapshot was built without COSIGN_KEY or CAPCTL_SIGN_KEYLESS")
	}
}

// archiveFiles reads an archive's regular files (name -> content).
func archiveFiles(t *testing.T, path string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	if strings.HasSuffix(path, ".zip") {
		z, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		for _, f := range z.File {
			if f.FileInfo().IsDir() {
				continue
			}
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			files[f.Name] = b
		}
		return files
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
	return files
}

// committedManPages are the man pages `make docs` generated (docs/man), which every archive holds.
func committedManPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "man", "capctl*.1"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages in docs/man (%v): run `make docs`", err)
	}
	for i, p := range pages {
		pages[i] = filepath.Base(p)
	}
	sort.Strings(pages)
	return pages
}

func TestArchivesHoldBinaryManPagesAndCompletions(t *testing.T) {
	d := openDist(t)
	pages := committedManPages(t)
	for _, a := range d.byType("Archive") {
		files := archiveFiles(t, filepath.Join(d.dir, a.Name))
		bin := "capctl"
		if a.Goos == "windows" {
			bin = "capctl.exe"
		}
		want := []string{bin, "README.md", "completions/capctl.bash", "completions/_capctl", "completions/capctl.fish", "completions/capctl.ps1"}
		for _, p := range pages {
			want = append(want, "man/"+p)
		}
		for _, w := range want {
			if len(files[w]) == 0 {
				t.Errorf("%s: %s missing or empty", a.Name, w)
			}
		}
		if b := files["man/capctl.1"]; !strings.Contains(string(b), ".TH \"CAPCTL\"") {
			t.Errorf("%s: man/capctl.1 is not a man page", a.Name)
		}
		if b := files["completions/capctl.bash"]; !strings.Contains(string(b), "__start_capctl") {
			t.Errorf("%s: completions/capctl.bash is not capctl's bash completion", a.Name)
		}
	}
}

// spdx is the part of an SPDX 2.x JSON document the check reads.
type spdx struct {
	SPDXVersion string `json:"spdxVersion"`
	Packages    []struct {
		Name         string `json:"name"`
		VersionInfo  string `json:"versionInfo"`
		ExternalRefs []struct {
			ReferenceType    string `json:"referenceType"`
			ReferenceLocator string `json:"referenceLocator"`
		} `json:"externalRefs"`
	} `json:"packages"`
}

// TestSBOMPerArchiveNamesTheCommitCapctlReports reads each archive's SBOM: an SPDX document that
// lists capctl's own Go module at a version carrying the commit, and the binary of this
// machine's archive reports that same commit in `capctl version`.
func TestSBOMPerArchiveNamesTheCommitCapctlReports(t *testing.T) {
	d := openDist(t)
	sboms := map[string]bool{}
	for _, s := range d.byType("SBOM") {
		sboms[s.Name] = true
	}
	var hostCommit string
	for _, a := range d.byType("Archive") {
		if a.Goos != runtime.GOOS || a.Goarch != runtime.GOARCH {
			continue
		}
		dir := t.TempDir()
		files := archiveFiles(t, filepath.Join(d.dir, a.Name))
		bin := filepath.Join(dir, "capctl")
		if err := os.WriteFile(bin, files["capctl"], 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "version", "-o", "json").Output()
		if err != nil {
			t.Fatalf("%s: capctl version: %v", a.Name, err)
		}
		var v map[string]map[string]string
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("capctl version -o json: %v\n%s", err, out)
		}
		hostCommit = v["capctl"]["gitCommit"]
	}
	if len(hostCommit) < 12 {
		t.Fatalf("no archive for %s/%s, or its capctl version reports commit %q", runtime.GOOS, runtime.GOARCH, hostCommit)
	}
	for _, a := range d.byType("Archive") {
		name := a.Name + ".sbom.json"
		if !sboms[name] {
			t.Errorf("%s has no SBOM %s", a.Name, name)
			continue
		}
		b, err := os.ReadFile(filepath.Join(d.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var doc spdx
		if err := json.Unmarshal(b, &doc); err != nil || !strings.HasPrefix(doc.SPDXVersion, "SPDX-") {
			t.Errorf("%s is not an SPDX JSON document (%v)", name, err)
			continue
		}
		commit := ""
		for _, p := range doc.Packages {
			if p.Name != "github.com/capctl/capctl" {
				continue
			}
			commit = pseudoVersionCommit(p.VersionInfo)
		}
		if commit == "" {
			t.Errorf("%s: no package github.com/capctl/capctl at a version naming a commit", name)
			continue
		}
		if !strings.HasPrefix(hostCommit, commit) {
			t.Errorf("%s names commit %s; capctl version reports %s", name, commit, hostCommit)
		}
	}
}

// pseudoVersionCommit is the commit (12 hex digits) at the end of a Go pseudo-version such as
// v0.0.0-20261201210000-0123456789ab (optionally +dirty), which the Go toolchain writes into a
// binary's build info from its VCS revision.
func pseudoVersionCommit(v string) string {
	m := regexp.MustCompile(`-(?:0\.)?\d{14}-([0-9a-f]{12})(?:\+dirty)?$`).FindStringSubmatch(v)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestKrewManifestAndHomebrewCaskPointAtTheArchives checks that both install recipes name every
// archive they cover by its release URL and with its checksum.
func TestKrewManifestAndHomebrewCaskPointAtTheArchives(t *testing.T) {
	d := openDist(t)
	sums := map[string]string{}
	for _, a := range d.byType("Archive") {
		sums[a.Name] = d.checksums[a.Name]
	}

	krews := d.byType("Krew Plugin Manifest")
	if len(krews) != 1 {
		t.Fatalf("%d krew manifests, want 1", len(krews))
	}
	b, err := os.ReadFile(krews[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Platforms []struct {
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
				Bin    string `json:"bin"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	if manifest.Kind != "Plugin" || manifest.Metadata.Name != "capctl" {
		t.Errorf("krew manifest is %s %q, want Plugin capctl (kubectl capctl)", manifest.Kind, manifest.Metadata.Name)
	}
	if len(manifest.Spec.Platforms) != len(platforms) {
		t.Errorf("krew manifest has %d platforms, want %d", len(manifest.Spec.Platforms), len(platforms))
	}
	for _, p := range manifest.Spec.Platforms {
		checkURL(t, "krew manifest", p.URI, p.SHA256, sums)
		if p.Bin != "capctl" && p.Bin != "capctl.exe" {
			t.Errorf("krew platform %s runs %q, want capctl", p.URI, p.Bin)
		}
	}

	casks := d.byType("Homebrew Cask")
	if len(casks) != 1 {
		t.Fatalf("%d Homebrew casks, want 1", len(casks))
	}
	rb, err := os.ReadFile(casks[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	// Homebrew fills #{version} in a cask's URLs from its `version` line, as goreleaser writes them.
	if m := regexp.MustCompile(`(?m)^\s*version "([^"]+)"`).FindSubmatch(rb); m != nil {
		rb = []byte(strings.ReplaceAll(string(rb), "#{version}", string(m[1])))
	}
	// Each platform block of the cask is `url "..."` followed by `sha256 "..."`.
	pairs := regexp.MustCompile(`(?s)url "([^"]+)".*?sha256 "([0-9a-f]{64})"`).FindAllStringSubmatch(string(rb), -1)
	if len(pairs) == 0 {
		pairs = regexp.MustCompile(`(?s)sha256 "([0-9a-f]{64})".*?url "([^"]+)"`).FindAllStringSubmatch(string(rb), -1)
		for _, p := range pairs {
			p[1], p[2] = p[2], p[1]
		}
	}
	if len(pairs) != 4 { // darwin and linux, amd64 and arm64
		t.Errorf("the Homebrew cask names %d archives, want 4 (darwin, linux × amd64, arm64):\n%s", len(pairs), rb)
	}
	for _, p := range pairs {
		checkURL(t, "Homebrew cask", p[1], p[2], sums)
	}
	for _, w := range []string{`binary "capctl"`, `manpage "man/capctl.1"`, "completions/capctl.bash"} {
		if !strings.Contains(string(rb), w) {
			t.Errorf("the Homebrew cask lacks %s:\n%s", w, rb)
		}
	}
}

func checkURL(t *testing.T, what, url, sum string, sums map[string]string) {
	t.Helper()
	name := url[strings.LastIndex(url, "/")+1:]
	want, ok := sums[name]
	if !ok || !strings.HasPrefix(url, "https://github.com/capctl/capctl/releases/download/") {
		t.Errorf("%s: %s is not the release URL of an archive", what, url)
		return
	}
	if sum != want {
		t.Errorf("%s: %s has sha256 %s, checksums.txt says %s", what, name, sum, want)
	}
}
