package repository

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/variables"
)

// ComponentsOptions tune Components.
type ComponentsOptions struct {
	// Version: "" = the version in the provider URL, "latest", or a pin such as v1.14.0.
	Version string
	// Pre lets "latest" pick pre-releases.
	Pre bool
	// TargetNamespace moves the components there; "" keeps the components' own Namespace.
	TargetNamespace string
	// SkipVariables leaves ${VAR} expressions as they are (`generate provider --raw/--describe`);
	// the text must then already be valid YAML.
	SkipVariables bool
	// Lookup gives variable values; nil uses the config (values capctl set, then the environment,
	// then the config file).
	Lookup func(name string) (string, bool)
}

// Components is a provider version's processed components, ready to install.
type Components struct {
	Release
	// URL is where the components file was read from; File its name.
	URL  string `json:"url"`
	File string `json:"file"`
	// TargetNamespace is the namespace every namespaced object is in.
	TargetNamespace string `json:"targetNamespace"`
	// Variables the raw components use (with defaults), in order of first appearance.
	Variables []variables.Variable `json:"variables"`
	// Images of the Deployments and DaemonSets, after image overrides.
	Images []string `json:"images"`
	// Objects sorted for install (SortForInstall), labelled, in the target namespace.
	Objects []unstructured.Unstructured `json:"-"`
	// Raw is the components file as fetched (before substitution).
	Raw []byte `json:"-"`
	// Artifact is the OCI artifact the components came from, by digest
	// (HOST/PATH/NAME@sha256:...); "" for other repositories and files from the overrides folder.
	Artifact string `json:"artifact,omitempty"`
}

// ErrContract is returned (wrapped) when a provider version implements a contract capctl cannot use.
var ErrContract = errors.New("incompatible contract")

// Components resolves the version of p and returns its processed components (spec §4): fetch
// (overrides, cache, repository), list variables, substitute them (all missing variables reported at
// once as a *variables.MissingError), parse, apply `images:` overrides, collect images, move into
// the target namespace, add clusterctl's labels and sort for install. The version must be in a
// release series of its metadata and implement a compatible contract.
func (c *Client) Components(ctx context.Context, p Provider, opts ComponentsOptions) (*Components, error) {
	rel, err := c.Resolve(ctx, p, opts.Version, ResolveOptions{Pre: opts.Pre})
	if err != nil {
		return nil, err
	}
	if !contract.Usable(rel.Contract) {
		return nil, fmt.Errorf("%s %s implements contract %s; capctl works with %v: %w", p, rel.Version, rel.Contract, contract.Compatible(contract.Current), ErrContract)
	}
	file := p.ComponentsFile()
	raw, origin, err := c.getFile(ctx, p, rel.Version, file)
	if err != nil {
		return nil, err
	}
	name := file
	if origin == fromOverride {
		name, _ = c.overridePath(p, rel.Version, file)
	} else if s, _, err := c.source(p); err == nil {
		name = s.fileURL(rel.Version, file)
	}
	out := &Components{Release: *rel, URL: name, File: file, Raw: raw}
	if origin != fromOverride {
		if out.Artifact, err = c.Artifact(ctx, p, rel.Version); err != nil {
			return nil, err
		}
	}
	out.Variables, err = variables.List(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	text := raw
	if !opts.SkipVariables {
		lookup := opts.Lookup
		if lookup == nil {
			lookup = variables.FromConfig(c.cfg)
		}
		text, err = variables.Process(raw, lookup)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", p, rel.Version, err)
		}
	}
	objs, err := ParseYAML(name, text)
	if err != nil {
		return nil, err
	}
	if c.cfg != nil {
		imgs, err := c.cfg.Images()
		if err != nil {
			return nil, err
		}
		if err := ApplyImageOverrides(objs, p.ManifestLabel(), imgs); err != nil {
			return nil, err
		}
	}
	out.Images = Images(objs)
	target := opts.TargetNamespace
	if target == "" {
		if target, err = InspectTargetNamespace(objs); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if target == "" {
			return nil, fmt.Errorf("%s %s: the components have no Namespace object, so the target namespace can't be defaulted; give one (--target-namespace)", p, rel.Version)
		}
	}
	if objs, err = SetTargetNamespace(objs, target); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out.TargetNamespace = target
	AddLabels(objs, p.ManifestLabel())
	SortForInstall(objs)
	out.Objects = objs
	return out, nil
}

// CheckTargetNamespace is the one rule of --target-namespace (init, init list-images, generate
// provider): empty (the components' own namespace) or a namespace name.
func CheckTargetNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("--target-namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}

// ComponentImages lists the images a provider version runs, after image overrides. Components
// whose variables have no value are read raw: images rarely depend on variables, and listing them
// must not need the provider's credentials.
func (c *Client) ComponentImages(ctx context.Context, p Provider, opts ComponentsOptions) ([]string, error) {
	comps, err := c.Components(ctx, p, opts)
	var missing *variables.MissingError
	if errors.As(err, &missing) {
		opts.SkipVariables = true
		comps, err = c.Components(ctx, p, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.ManifestLabel(), err)
	}
	return comps.Images, nil
}
