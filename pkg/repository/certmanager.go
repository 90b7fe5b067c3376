package repository

import (
	"context"
	"fmt"

	"github.com/capctl/capctl/pkg/config"
)

// CertManagerName is the folder and image-override component name of cert-manager.
const CertManagerName = "cert-manager"

// CertManagerFile is cert-manager's components file as fetched, unparsed: what the config's
// `cert-manager.url` and `cert-manager.version` name. Parsing, image overrides and labelling are
// pkg/certmanager's business; repository only fetches.
type CertManagerFile struct {
	Version string
	// URL is where the file came from (for messages and parse errors).
	URL  string
	File string
	Raw  []byte
}

// CertManagerProvider is the pseudo-provider the cert-manager URL is read through: the same
// repository kinds, cache and overrides folder ({overridesFolder}/cert-manager/{version}/{file}) as
// providers. A local cert-manager URL must follow {basepath}/cert-manager/{version}/{file}.
func (c *Client) CertManagerProvider() (Provider, config.CertManager, error) {
	cm := config.CertManager{Version: config.DefaultCertManagerVersion}
	cm.URL = fmt.Sprintf("https://github.com/cert-manager/cert-manager/releases/%s/cert-manager.yaml", cm.Version)
	if c.cfg != nil {
		var err error
		if cm, err = c.cfg.CertManager(); err != nil {
			return Provider{}, cm, err
		}
	}
	return Provider{Name: CertManagerName, URL: cm.URL}, cm, nil
}

// CertManagerFile fetches cert-manager's components file: version "" means the configured version
// (`cert-manager.version`, default v1.21.1); "latest" the newest final version listed.
func (c *Client) CertManagerFile(ctx context.Context, version string) (*CertManagerFile, error) {
	p, cm, err := c.CertManagerProvider()
	if err != nil {
		return nil, err
	}
	if version == "" {
		version = cm.Version
	}
	if version == "latest" {
		vs, err := c.Versions(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("cert-manager: %w", err)
		}
		cands := orderCandidates(vs, false)
		if len(cands) == 0 {
			return nil, fmt.Errorf("cert-manager: %s lists no versions", p.URL)
		}
		version = cands[0]
	}
	file := p.ComponentsFile()
	raw, err := c.GetFile(ctx, p, version, file)
	if err != nil {
		return nil, fmt.Errorf("cert-manager %s: %w", version, err)
	}
	s, _, _ := c.source(p)
	return &CertManagerFile{Version: version, URL: s.fileURL(version, file), File: file, Raw: raw}, nil
}

// ImageOverrides returns the config's `images:` overrides (none without a config).
func (c *Client) ImageOverrides() (map[string]config.ImageOverride, error) {
	if c.cfg == nil {
		return nil, nil
	}
	return c.cfg.Images()
}
