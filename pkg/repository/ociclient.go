package repository

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"time"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/capctl/capctl/internal/userinput"
)

// Configuration keys (clusterctl.yaml or the environment) of OCI registries.
const (
	// OCIPlainHTTPKey lists registries (host or host:port, comma-separated) reached over plain
	// HTTP. Only those; never with credentials.
	OCIPlainHTTPKey = "OCI_PLAIN_HTTP_REGISTRIES"
	// OCICAFileKey names a PEM file of CA certificates trusted for registries, beside the
	// system's roots.
	OCICAFileKey = "OCI_CA_FILE"
)

// OCICredentials resolves a registry's credential. Nil: Docker's credential store
// ($DOCKER_CONFIG/config.json or ~/.docker/config.json, with its credential helpers).
type OCICredentials func(ctx context.Context, registry string) (auth.Credential, error)

func (c *Client) lookup(key string) string {
	if c.cfg == nil {
		return ""
	}
	v, _ := c.cfg.Lookup(key)
	return strings.TrimSpace(v)
}

// ociPlainHTTP reports whether host was explicitly allowed plain HTTP.
func (c *Client) ociPlainHTTP(host string) bool {
	for _, h := range strings.Split(c.lookup(OCIPlainHTTPKey), ",") {
		if h = strings.TrimSpace(h); h != "" && strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// ociCredentials is the credential function of every registry request.
func (c *Client) ociCredentials() (auth.CredentialFunc, error) {
	if c.opts.OCICredentials != nil {
		return auth.CredentialFunc(c.opts.OCICredentials), nil
	}
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Docker's credential store (DOCKER_CONFIG or ~/.docker/config.json): %w", err)
	}
	return credentials.Credential(store), nil
}

// ociTransport is the transport of registry requests: TLS verified against the system's roots and
// OCI_CA_FILE.
func (c *Client) ociTransport(ctx context.Context) (*http.Transport, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	if c.opts.HTTPClient != nil && c.opts.HTTPClient.Transport != nil {
		if t, ok := c.opts.HTTPClient.Transport.(*http.Transport); ok {
			base = t.Clone()
		}
	}
	f := c.lookup(OCICAFileKey)
	if f == "" {
		return base, nil
	}
	pem, err := userinput.ReadFile(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", OCICAFileKey, f, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if base.TLSClientConfig != nil && base.TLSClientConfig.RootCAs != nil {
		pool = base.TLSClientConfig.RootCAs.Clone()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s holds no PEM certificate", OCICAFileKey, f)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if base.TLSClientConfig != nil {
		tc = base.TLSClientConfig.Clone()
	}
	tc.RootCAs = pool
	base.TLSClientConfig = tc
	return base, nil
}

// ociHTTPClient is the HTTP client of provider artifacts (manifests and files, bounded): the
// repository's retries, and HTML answers turned into errors.
func (c *Client) ociHTTPClient(ctx context.Context) (*http.Client, error) {
	base, err := c.ociTransport(ctx)
	if err != nil {
		return nil, err
	}
	timeout := 2 * time.Minute
	if c.opts.HTTPClient != nil && c.opts.HTTPClient.Timeout > 0 {
		timeout = c.opts.HTTPClient.Timeout
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: &htmlGuardTransport{base: &retryTransport{base: base, attempts: c.opts.RetryAttempts, backoff: c.opts.RetryBackoff}},
	}, nil
}

// registryAccess says how to reach a registry: plain HTTP only when OCI_PLAIN_HTTP_REGISTRIES
// lists it, and then never with a credential (refused when one is configured, since it would
// travel in clear); otherwise HTTPS with the credential store's credential.
func (c *Client) registryAccess(ctx context.Context, host string) (plain bool, cred auth.CredentialFunc, err error) {
	cred, err = c.ociCredentials()
	if err != nil {
		return false, nil, err
	}
	if !c.ociPlainHTTP(host) {
		return false, cred, nil
	}
	got, err := cred(ctx, host)
	if err != nil {
		return false, nil, fmt.Errorf("reading the credential of %s: %w", host, err)
	}
	if got != auth.EmptyCredential {
		return false, nil, fmt.Errorf("%s is listed in %s, but a credential for it is configured: credentials are never sent over plain HTTP; serve the registry over HTTPS (%s names a private CA) or remove its credential (docker logout %s)",
			host, OCIPlainHTTPKey, OCICAFileKey, host)
	}
	return true, nil, nil
}

// ociSource builds the source of an oci:// provider URL. Plain HTTP only for registries listed
// in OCI_PLAIN_HTTP_REGISTRIES, and refused when a credential for the registry exists: it would
// travel in clear.
func (c *Client) ociSource(p Provider, loc *location) (*ociSource, error) {
	ctx := context.Background()
	repo, err := remote.NewRepository(loc.host + "/" + loc.repoPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	plain, cred, err := c.registryAccess(ctx, loc.host)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	repo.PlainHTTP = plain
	// One HTTP client and one token cache for every repository of the run: connections and
	// tokens are reused from one provider to the next (c.mu is held: source() builds sources).
	if c.ociHTTP == nil {
		if c.ociHTTP, err = c.ociHTTPClient(ctx); err != nil {
			return nil, err
		}
		c.ociAuthCache = auth.NewCache()
	}
	repo.Client = &auth.Client{Client: c.ociHTTP, Cache: c.ociAuthCache, Credential: cred}
	// A registry cannot make capctl page through tags for ever.
	repo.TagListMaxPages = 100
	return &ociSource{p: p, host: loc.host, repoRef: loc.host + "/" + loc.repoPath, digest: loc.digest, repo: repo, cache: c.cache, offline: c.opts.Offline}, nil
}

// htmlGuardTransport turns an HTML answer into an error: a registry's API never serves HTML, so
// one is a proxy's login page or a captive portal, and saying so beats a JSON parse error.
type htmlGuardTransport struct{ base http.RoundTripper }

func (t *htmlGuardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/html") {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), &htmlError{file: "a registry API answer"})
	}
	return resp, nil
}
