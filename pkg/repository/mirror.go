package repository

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/pkg/provider"
)

// MirrorRequest names a provider version to copy ("" or "latest" resolve as Resolve does).
type MirrorRequest struct {
	Provider Provider
	Version  string
}

// MirrorOptions tune Mirror.
type MirrorOptions struct {
	// CertManager also copies cert-manager's manifests (the configured URL and version).
	CertManager bool
	// Pre lets "latest" pick pre-releases.
	Pre bool
	// Layout of the artifacts published to an oci:// target (LayoutArchive when empty).
	Layout string
	// Progress, when set, is called before each version is copied.
	Progress func(what string)
}

// MirroredVersion is one provider version written by Mirror.
type MirroredVersion struct {
	Name    string        `json:"name"`
	Type    provider.Type `json:"type,omitempty"`
	Version string        `json:"version"`
	Dir     string        `json:"dir"`
	Files   []string      `json:"files"`
	URL     string        `json:"url"` // the URL to configure for this provider
	// Digest is the manifest digest of an artifact published to an OCI registry (Dir is then its
	// reference); Unchanged says the registry already held exactly it.
	Digest    string `json:"digest,omitempty"`
	Unchanged bool   `json:"unchanged,omitempty"`
}

// MirrorResult lists what Mirror wrote and the configuration that points at it.
type MirrorResult struct {
	Dir         string            `json:"dir"`
	Providers   []MirroredVersion `json:"providers"`
	CertManager *MirroredVersion  `json:"certManager,omitempty"`
	// Config is a clusterctl.yaml fragment (providers: and cert-manager:) using the mirror.
	Config string `json:"config"`
}

// Mirror copies provider versions (components, metadata.yaml and, for infrastructure providers,
// cluster templates and cluster classes) into a local repository at dir in clusterctl's layout
// ({dir}/{provider-label}/{version}/{file}), ready to be named in `providers:` for air-gapped use.
// Files come through GetFile, so the overrides folder and the cache apply (offline mirroring from
// the cache works). A dir of oci://HOST/PROJECT publishes to an OCI registry instead (mirrorOCI).
func (c *Client) Mirror(ctx context.Context, dir string, reqs []MirrorRequest, opts MirrorOptions) (*MirrorResult, error) {
	if err := CheckMirrorDir(dir); err != nil {
		return nil, err
	}
	if err := CheckMirrorLayout(dir, opts.Layout); err != nil {
		return nil, err
	}
	write, res, err := c.mirrorWriter(dir, opts)
	if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		rel, err := c.Resolve(ctx, r.Provider, r.Version, ResolveOptions{Pre: opts.Pre})
		if err != nil {
			return res, err
		}
		if opts.Progress != nil {
			opts.Progress(fmt.Sprintf("%s %s", r.Provider.ManifestLabel(), rel.Version))
		}
		files, err := c.mirrorFiles(ctx, r.Provider, rel.Version)
		if err != nil {
			return res, err
		}
		mv, err := write(ctx, r.Provider, rel.Version, files)
		if err != nil {
			return res, err
		}
		res.Providers = append(res.Providers, *mv)
	}
	if opts.CertManager {
		p, cm, err := c.CertManagerProvider()
		if err != nil {
			return res, err
		}
		if opts.Progress != nil {
			opts.Progress(fmt.Sprintf("cert-manager %s", cm.Version))
		}
		mv, err := write(ctx, p, cm.Version, []string{p.ComponentsFile()})
		if err != nil {
			return res, err
		}
		res.CertManager = mv
	}
	res.Config = mirrorConfig(res)
	return res, nil
}

// mirrorWrite writes one provider version's files to the mirror and says what it wrote and the URL
// that reads it back.
type mirrorWrite func(ctx context.Context, p Provider, version string, files []string) (*MirroredVersion, error)

// mirrorWriter is where Mirror writes: a local repository folder, or an OCI registry.
func (c *Client) mirrorWriter(dir string, opts MirrorOptions) (mirrorWrite, *MirrorResult, error) {
	if IsOCI(dir) {
		target, err := parseOCITarget(dir)
		if err != nil {
			return nil, nil, err
		}
		layout := opts.Layout
		if layout == "" {
			layout = LayoutArchive
		}
		return func(ctx context.Context, p Provider, version string, files []string) (*MirroredVersion, error) {
			return c.publish(ctx, target, p, version, files, layout)
		}, &MirrorResult{Dir: dir}, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, p Provider, version string, files []string) (*MirroredVersion, error) {
		mv, err := c.copyFiles(ctx, abs, p, version, files)
		if err != nil {
			return nil, err
		}
		if p.Type == "" { // cert-manager: its URL names the version's file
			mv.URL = filepath.ToSlash(filepath.Join(mv.Dir, p.ComponentsFile()))
			return mv, nil
		}
		mv.Type = p.Type
		mv.URL = filepath.ToSlash(filepath.Join(abs, p.ManifestLabel(), "latest", p.ComponentsFile()))
		return mv, nil
	}, &MirrorResult{Dir: abs}, nil
}

// CheckMirrorDir refuses a mirror folder that cannot be one, before anything is fetched: none
// given, or a path that is a file (a missing folder is created).
func CheckMirrorDir(dir string) error {
	if dir == "" {
		return errors.New("--to DIR is required: the folder of the local repository to write (or oci://HOST/PROJECT)")
	}
	if IsOCI(dir) {
		_, err := parseOCITarget(dir)
		return err
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("--to %s is a file, not a folder", dir)
	}
	return nil
}

// CheckMirrorLayout refuses a --layout that does not apply: one given for a folder, or unknown.
func CheckMirrorLayout(to, layout string) error {
	switch {
	case layout == "":
		return nil
	case !IsOCI(to):
		return fmt.Errorf("--layout %s applies to an oci:// target only (--to %s is a folder)", layout, to)
	case layout != LayoutArchive && layout != LayoutOperator:
		return fmt.Errorf("--layout %q: must be one of %s", layout, strings.Join(Layouts, ", "))
	}
	return nil
}

// mirrorFiles picks the files of a version worth mirroring.
func (c *Client) mirrorFiles(ctx context.Context, p Provider, version string) ([]string, error) {
	want := []string{p.ComponentsFile(), MetadataFile}
	if p.Type != provider.InfrastructureProviderType {
		return want, nil
	}
	all, err := c.ListFiles(ctx, p, version)
	if err != nil {
		return nil, err
	}
	for _, f := range all {
		if (strings.HasPrefix(f, "cluster-template") || strings.HasPrefix(f, "clusterclass")) && strings.HasSuffix(f, ".yaml") {
			want = append(want, f)
		}
	}
	return want, nil
}

func (c *Client) copyFiles(ctx context.Context, dir string, p Provider, version string, files []string) (*MirroredVersion, error) {
	vdir, err := safeJoin(dir, p.ManifestLabel(), version)
	if err != nil {
		return nil, err
	}
	content, err := c.readMirrored(ctx, p, version, files)
	if err != nil {
		return nil, err
	}
	mv := &MirroredVersion{Name: p.Name, Version: version, Dir: vdir, Files: slices.Sorted(maps.Keys(content))}
	for _, f := range mv.Files {
		dst, err := safeJoin(vdir, f)
		if err != nil {
			return nil, err
		}
		if err := writeFileAtomic(dst, content[f], 0o644); err != nil {
			return nil, err
		}
	}
	return mv, nil
}

// readMirrored reads the files of version to mirror; an optional file (neither the components nor
// metadata.yaml) the release lacks is left out.
func (c *Client) readMirrored(ctx context.Context, p Provider, version string, files []string) (map[string][]byte, error) {
	content := map[string][]byte{}
	for _, f := range files {
		b, err := c.GetFile(ctx, p, version, f)
		if err != nil {
			if f != p.ComponentsFile() && f != MetadataFile && errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, err
		}
		content[f] = b
	}
	return content, nil
}

func mirrorConfig(res *MirrorResult) string {
	type prov struct {
		Name string `json:"name"`
		URL  string `json:"url"`
		Type string `json:"type"`
	}
	cfg := map[string]any{}
	seen := map[string]bool{}
	var ps []prov
	for _, m := range res.Providers {
		k := string(m.Type) + "/" + m.Name
		if seen[k] {
			continue
		}
		seen[k] = true
		ps = append(ps, prov{Name: m.Name, URL: m.URL, Type: string(m.Type)})
	}
	if len(ps) > 0 {
		cfg["providers"] = ps
	}
	if res.CertManager != nil {
		cfg["cert-manager"] = map[string]string{"url": res.CertManager.URL, "version": res.CertManager.Version}
	}
	b, _ := yaml.Marshal(cfg)
	return string(b)
}
