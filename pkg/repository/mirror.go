package repository

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
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
// the cache works).
func (c *Client) Mirror(ctx context.Context, dir string, reqs []MirrorRequest, opts MirrorOptions) (*MirrorResult, error) {
	if err := CheckMirrorDir(dir); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	res := &MirrorResult{Dir: abs}
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
		mv, err := c.copyFiles(ctx, abs, r.Provider, rel.Version, files)
		if err != nil {
			return res, err
		}
		mv.Type = r.Provider.Type
		mv.URL = filepath.ToSlash(filepath.Join(abs, r.Provider.ManifestLabel(), "latest", r.Provider.ComponentsFile()))
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
		mv, err := c.copyFiles(ctx, abs, p, cm.Version, []string{p.ComponentsFile()})
		if err != nil {
			return res, err
		}
		mv.URL = filepath.ToSlash(filepath.Join(mv.Dir, p.ComponentsFile()))
		res.CertManager = mv
	}
	res.Config = mirrorConfig(res)
	return res, nil
}

// CheckMirrorDir refuses a mirror folder that cannot be one, before anything is fetched: none
// given, or a path that is a file (a missing folder is created).
func CheckMirrorDir(dir string) error {
	if dir == "" {
		return errors.New("--to DIR is required: the folder of the local repository to write")
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("--to %s is a file, not a folder", dir)
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
	mv := &MirroredVersion{Name: p.Name, Version: version, Dir: vdir}
	for _, f := range files {
		b, err := c.GetFile(ctx, p, version, f)
		if err != nil {
			if f != p.ComponentsFile() && f != MetadataFile && errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, err
		}
		dst, err := safeJoin(vdir, f)
		if err != nil {
			return nil, err
		}
		if err := writeFileAtomic(dst, b, 0o644); err != nil {
			return nil, err
		}
		mv.Files = append(mv.Files, f)
	}
	sort.Strings(mv.Files)
	return mv, nil
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
