package repository

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/pkg/config"
)

// CertManagerName is the folder and image-override component name of cert-manager.
const CertManagerName = "cert-manager"

// CertManagerComponents are cert-manager's manifests as the config's `cert-manager.url` and
// `cert-manager.version` name them, parsed, with `images:` overrides for the `cert-manager`
// component applied and sorted for install. No labels are added and no variables are substituted:
// labelling cert-manager objects (clusterctl.cluster.x-k8s.io/core: cert-manager, the version
// annotation) is the installer's business.
type CertManagerComponents struct {
	Version string                      `json:"version"`
	URL     string                      `json:"url"`
	File    string                      `json:"file"`
	Objects []unstructured.Unstructured `json:"-"`
	Images  []string                    `json:"images"`
	Raw     []byte                      `json:"-"`
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

// CertManager fetches cert-manager's components: version "" means the configured version
// (`cert-manager.version`, default v1.21.1); "latest" the newest final version listed.
func (c *Client) CertManager(ctx context.Context, version string) (*CertManagerComponents, error) {
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
	name := s.fileURL(version, file)
	objs, err := ParseYAML(name, raw)
	if err != nil {
		return nil, err
	}
	if c.cfg != nil {
		imgs, err := c.cfg.Images()
		if err != nil {
			return nil, err
		}
		if err := ApplyImageOverrides(objs, CertManagerName, imgs); err != nil {
			return nil, err
		}
	}
	SortForInstall(objs)
	return &CertManagerComponents{Version: version, URL: name, File: file, Objects: objs, Images: Images(objs), Raw: raw}, nil
}
