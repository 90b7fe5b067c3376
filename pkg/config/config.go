package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/viper"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/capctl/capctl/internal/redact"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/provider"
)

// Default cert-manager settings, as clusterctl v1.14 pins them.
const (
	DefaultCertManagerVersion = "v1.21.1"
	DefaultCertManagerURL     = "https://github.com/cert-manager/cert-manager/releases/{version}/cert-manager.yaml"
	DefaultCertManagerTimeout = 10 * time.Minute
)

// Keys with a meaning of their own; every other top-level key is a free variable.
const (
	ProvidersKey       = "providers"
	ImagesKey          = "images"
	CertManagerKey     = "cert-manager"
	OverridesFolderKey = "overridesFolder"
	GitHubTokenKey     = "github-token"
)

// Config is the loaded configuration of one capctl run.
type Config struct {
	file string // the file read; empty when none was found
	v    *viper.Viper
	set  map[string]string // values set by capctl itself (highest precedence)
	env  func(string) (string, bool)
}

// Provider is an entry of the `providers:` list.
type Provider struct {
	Name string        `json:"name"`
	URL  string        `json:"url"`
	Type provider.Type `json:"type"`
}

// ImageOverride is one entry of the `images:` map.
type ImageOverride struct {
	Repository string `json:"repository,omitempty"`
	Name       string `json:"name,omitempty"`
	Tag        string `json:"tag,omitempty"`
}

// CertManager holds the `cert-manager:` settings.
type CertManager struct {
	URL                   string
	Version               string
	Timeout               time.Duration
	ExternallyProvisioned bool
}

// Options tune Load; the zero value reads the default locations and the process environment.
type Options struct {
	// Path is --config: a file path or an http(s) URL. Empty searches the default locations.
	Path string
	// HTTPClient downloads a config given as a URL; nil uses a client with a 30 s timeout.
	HTTPClient *http.Client
	// LookupEnv replaces os.LookupEnv (tests).
	LookupEnv func(string) (string, bool)
}

// Load reads the configuration file. A missing default file is fine; a missing --config file, an
// unreadable one or malformed YAML is an error that names the file (and the line, for YAML).
func Load(ctx context.Context, opts Options) (*Config, error) {
	c := &Config{v: viper.New(), set: map[string]string{}, env: opts.LookupEnv}
	if c.env == nil {
		c.env = os.LookupEnv
	}
	path := opts.Path
	switch {
	case strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://"):
		local, cleanup, err := download(ctx, opts.HTTPClient, path)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		if err := c.read(ctx, local, path); err != nil {
			return nil, err
		}
	case path != "":
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("config file %s: %w (check the --config flag)", path, err)
		}
		if err := c.read(ctx, path, path); err != nil {
			return nil, err
		}
	default:
		if found := findDefault(); found != "" {
			if err := c.read(ctx, found, found); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// findDefault looks for clusterctl.{yaml,yml,json,...} in the XDG folder, then the legacy one.
func findDefault() string {
	for _, dir := range []string{ConfigDir(), LegacyConfigDir()} {
		for _, ext := range viper.SupportedExts {
			p := filepath.Join(dir, "clusterctl."+ext)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p
			}
		}
	}
	return ""
}

func (c *Config) read(ctx context.Context, path, shownAs string) error {
	// Read here, within the input bound, rather than by viper: a config file named /dev/zero or an
	// endless pipe would otherwise be read until the process runs out of memory.
	data, err := userinput.ReadFile(ctx, path)
	if err != nil {
		return fmt.Errorf("reading config file %s: %w", shownAs, err)
	}
	typ := strings.TrimPrefix(filepath.Ext(path), ".")
	if typ == "" {
		typ = "yaml"
	}
	c.v.SetConfigType(typ)
	if err := c.v.ReadConfig(bytes.NewReader(data)); err != nil {
		var parseErr viper.ConfigParseError
		if errors.As(err, &parseErr) {
			// The parser's own "line N" is where the enclosing block starts; name the real line.
			if where, ok := describeYAMLError(data); ok {
				return fmt.Errorf("config file %s is not valid YAML: %s", shownAs, where)
			}
			return fmt.Errorf("config file %s is not valid YAML: %s", shownAs, strings.TrimPrefix(parseErr.Error(), "While parsing config: "))
		}
		return fmt.Errorf("reading config file %s: %w", shownAs, err)
	}
	c.file = shownAs
	return nil
}

func download(ctx context.Context, hc *http.Client, rawURL string) (string, func(), error) {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	if _, err := url.Parse(rawURL); err != nil {
		return "", nil, fmt.Errorf("config URL %s: %w", rawURL, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return "", nil, fmt.Errorf("config URL %s: %w", rawURL, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", nil, fmt.Errorf("downloading config file %s: %w", rawURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("downloading config file %s: server answered %s", rawURL, resp.Status)
	}
	// The file may hold tokens: keep it private and remove it after the run.
	f, err := os.CreateTemp("", "capctl-config-*.yaml")
	if err != nil {
		return "", nil, fmt.Errorf("saving config file %s: %w", rawURL, err)
	}
	cleanup := func() { _ = os.Remove(f.Name()) }
	_, err = io.Copy(f, io.LimitReader(resp.Body, 16<<20))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("saving config file %s: %w", rawURL, err)
	}
	return f.Name(), cleanup, nil
}

// File is the config file that was read, or "" when none was found.
func (c *Config) File() string { return c.file }

// Set records a value decided by capctl itself (CLUSTER_NAME, NAMESPACE, ...): it wins over the
// environment and the file.
func (c *Config) Set(key, value string) { c.set[key] = value }

// ErrVariableNotSet is returned (wrapped) by Get for a variable nobody set.
var ErrVariableNotSet = errors.New("variable not set")

// Get looks a variable up with clusterctl's precedence: values capctl set, then the process
// environment (an empty value counts as set), then top-level keys of the config file.
func (c *Config) Get(key string) (string, error) {
	if v, ok := c.set[key]; ok {
		return v, nil
	}
	envKey := strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
	if v, ok := c.env(envKey); ok {
		return v, nil
	}
	if v, ok := c.env(key); ok {
		return v, nil
	}
	if c.v.IsSet(key) {
		raw := c.v.Get(key)
		switch raw.(type) {
		case map[string]any, []any:
			return "", fmt.Errorf("config key %q is a structure, not a variable value", key)
		}
		return c.v.GetString(key), nil
	}
	return "", fmt.Errorf("%w: %q; set it as an environment variable or a top-level key of the config file", ErrVariableNotSet, key)
}

// Lookup is Get for callers that only need to know whether a value exists.
func (c *Config) Lookup(key string) (string, bool) {
	v, err := c.Get(key)
	return v, err == nil
}

// Variables lists the free variables set in the config file (not the structured keys), with
// secret-looking values redacted, for display.
func (c *Config) Variables() map[string]string {
	out := map[string]string{}
	for _, k := range c.v.AllKeys() {
		top := strings.SplitN(k, ".", 2)[0]
		switch top {
		case strings.ToLower(ProvidersKey), strings.ToLower(ImagesKey), strings.ToLower(CertManagerKey), strings.ToLower(OverridesFolderKey):
			continue
		}
		out[strings.ToUpper(k)] = redact.Value(k, c.v.GetString(k))
	}
	return out
}

// Providers returns the validated `providers:` list, URLs with environment variables expanded.
func (c *Config) Providers() ([]Provider, error) {
	var raw []struct {
		Name string `mapstructure:"name"`
		URL  string `mapstructure:"url"`
		Type string `mapstructure:"type"`
	}
	if err := c.v.UnmarshalKey(ProvidersKey, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %s", c.file, describeDecodeError(ProvidersKey, err))
	}
	out := make([]Provider, 0, len(raw))
	for _, r := range raw {
		p := Provider{Name: r.Name, URL: os.Expand(r.URL, c.expandEnv), Type: provider.Type(r.Type)}
		if err := validateProvider(p); err != nil {
			return nil, fmt.Errorf("config file %s: provider %q of type %q: %w; fix the providers list", c.file, r.Name, r.Type, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func (c *Config) expandEnv(name string) string {
	v, _ := c.env(name)
	return v
}

func validateProvider(p Provider) error {
	if p.Name == "" {
		return errors.New("name is empty")
	}
	if p.Name != strings.ToLower(p.Name) {
		return errors.New("name must be lower case")
	}
	if errs := validation.IsDNS1123Subdomain(p.Name); len(errs) > 0 {
		return fmt.Errorf("name: %s", strings.Join(errs, "; "))
	}
	if _, err := provider.ParseType(string(p.Type)); err != nil {
		return err
	}
	if (p.Name == provider.CoreProviderName) != (p.Type == provider.CoreProviderType) {
		return fmt.Errorf("only %q may be a %s and it must be one", provider.CoreProviderName, provider.CoreProviderType)
	}
	if p.URL == "" {
		return errors.New("url is empty")
	}
	if _, err := url.Parse(p.URL); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	return nil
}

// Images returns the `images:` overrides keyed by selector (`all`, a component, component/image).
func (c *Config) Images() (map[string]ImageOverride, error) {
	out := map[string]ImageOverride{}
	if !c.v.IsSet(ImagesKey) {
		return out, nil
	}
	if err := c.v.UnmarshalKey(ImagesKey, &out); err != nil {
		return nil, fmt.Errorf("config file %s: %s", c.file, describeDecodeError(ImagesKey, err))
	}
	return out, nil
}

// CertManager returns the cert-manager settings with clusterctl's defaults filled in.
func (c *Config) CertManager() (CertManager, error) {
	cm := CertManager{Version: DefaultCertManagerVersion, Timeout: DefaultCertManagerTimeout}
	sub := func(k string) string { return c.v.GetString(CertManagerKey + "." + k) }
	if v := sub("version"); v != "" {
		cm.Version = v
	}
	cm.URL = strings.ReplaceAll(DefaultCertManagerURL, "{version}", cm.Version)
	if u := sub("url"); u != "" {
		cm.URL = os.Expand(u, c.expandEnv)
	}
	if t := sub("timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil {
			return cm, fmt.Errorf("config file %s: cert-manager.timeout %q is not a duration like 10m: %w", c.file, t, err)
		}
		cm.Timeout = d
	}
	if e := sub("externallyProvisioned"); e != "" {
		cm.ExternallyProvisioned = strings.EqualFold(e, "true")
	}
	return cm, nil
}

// OverridesFolder is the root of the overrides layer.
func (c *Config) OverridesFolder() string {
	if f := c.v.GetString(OverridesFolderKey); f != "" {
		return os.Expand(f, c.expandEnv)
	}
	if st, err := os.Stat(filepath.Join(LegacyConfigDir(), "overrides")); err == nil && st.IsDir() {
		if _, err := os.Stat(filepath.Join(ConfigDir(), "overrides")); err != nil {
			return filepath.Join(LegacyConfigDir(), "overrides")
		}
	}
	return filepath.Join(ConfigDir(), "overrides")
}

// GitHubToken returns the token for the GitHub API from GITHUB_TOKEN (env) or the config file's
// `github-token` / `GITHUB_TOKEN` keys. It is never logged.
func (c *Config) GitHubToken() string {
	for _, k := range []string{"GITHUB_TOKEN", GitHubTokenKey} {
		if v, err := c.Get(k); err == nil && v != "" {
			return v
		}
	}
	return ""
}

// SortedKeys returns m's keys sorted (a helper for stable output).
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
