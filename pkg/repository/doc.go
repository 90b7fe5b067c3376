// Package repository owns provider repositories: the provider registry, GitHub and local
// repository clients, the on-disk cache, version resolution, metadata.yaml, fetching files and
// components processing. It knows nothing about clusters.
//
// # Registry
//
// BuiltinProviders is clusterctl v1.14's list (66 providers). NewRegistry(cfg) adds the config
// file's `providers:` entries, replacing built-ins with the same name and type. Registry.Get (or
// Client.Provider) returns a Provider{Name, Type, URL} or an *UnknownProviderError listing the
// closest known names of that type (and the types the name exists under).
//
// # Client
//
//	c, err := repository.New(cfg, repository.Options{})   // cfg may be nil
//	p, err := c.Provider("docker", provider.InfrastructureProviderType)
//	versions, err := c.Versions(ctx, p)                     // newest first
//	rel, err := c.Resolve(ctx, p, "", repository.ResolveOptions{}) // "" = version in the URL
//	data, err := c.GetFile(ctx, p, rel.Version, "cluster-template.yaml")
//	files, err := c.ListFiles(ctx, p, rel.Version)          // repository files + overrides
//
// Options: HTTPClient, GitHubAPIURL / GitHubDownloadURL (GitHub Enterprise, tests), GoProxy
// (default: from GOPROXY; "off" lists versions through the GitHub API), GitHubToken
// (default: GITHUB_TOKEN from the environment or the config), CacheDir (default
// config.CacheDir()/repositories, "-" disables it), VersionsTTL (how long a listed version set is
// trusted for "latest", default 10m), Offline (no network at all), RetryAttempts/RetryBackoff.
//
// Credentials (GITHUB_TOKEN for the API, GITLAB_ACCESS_TOKEN) go only over HTTPS and only to the
// host they are for: WithCredential adds them per request, redirect hops included, and warns once
// per host why a request goes without (CredentialRefusal is the rule; pkg/templates uses it too).
// CleanCache removes cached files of one version, one repository or everything (`capctl
// repository cache clean`).
//
// Repository URLs (a provider's URL names its components file):
//   - GitHub: https://github.com/OWNER/REPO/releases/{latest|TAG}/FILE. Versions come from the Go
//     module proxy when Options.GoProxy is set ({proxy}/github.com/OWNER/REPO/@v/list, /v2/...: no
//     API call; GoProxyFromEnv reads GOPROXY as clusterctl does), else (or when the proxy fails)
//     from the releases API (100 releases per call; drafts skipped); files are downloaded by plain HTTPS from
//     https://github.com/OWNER/REPO/releases/download/TAG/FILE (no API quota), falling back to the
//     API (release by tag, then the asset) when that fails or a token is set and the plain
//     download 404s. Network errors and transient answers (cluster.IsTransient: 429, 500, 502,
//     503, 504) are retried with exponential backoff; other answers are not. A used-up rate limit (403/429 with X-RateLimit-Remaining: 0) is a *RateLimitError
//     naming the reset time and both remedies.
//   - GitLab generic packages:
//     https://gitlab.HOST/api/v4/projects/{project}/packages/generic/{package}/{version}/{file}
//     (GITLAB_ACCESS_TOKEN as a Bearer token). Versions cannot be listed: the URL's version is the
//     only one known, as in clusterctl; mirrors carry components and metadata only.
//   - Local: an absolute path or file:// URL, {basepath}/{provider-label}/{version|latest}/{file};
//     the provider-label folder must equal the provider's manifest label. Versions are the
//     sub-folders that parse as semantic versions. ".." is refused everywhere (ErrPathEscape).
//
// Files are read from, in order: the overrides folder
// ({overridesFolder}/{provider-label}/{version}/{file}), the in-memory cache of the run, the disk
// cache ({CacheDir}/files/github/OWNER/REPO/{version}/{file}), the repository. GitHub version lists
// are cached in {CacheDir}/versions/github/OWNER/REPO.json with their fetch time. A fetched file is
// validated before it is cached (validateFile: not an HTML page, metadata.yaml parses as metadata,
// YAML files as YAML), written atomically with a SHA-256 sidecar; a cached file without a matching
// sidecar is validated on read, and one that fails is reported with its path and fetched again
// once. A 200 answer whose body is shorter than its Content-Length is retried like a 5xx, then
// reported as a *TruncatedError ("download of URL was cut after N of M bytes").
//
// # Versions
//
// Resolve(ctx, p, version, ResolveOptions{Pre}) returns a *Release{Provider, Version, Series,
// Contract, Metadata}:
//   - "latest" (or a URL saying latest): the newest final release (pre-releases only when none
//     exists, or with Pre) whose metadata.yaml exists (a tag without a published release is
//     skipped); when that release's series does not implement contract.Current (v1beta2), the
//     newest series that does is used instead, as clusterctl does.
//   - a pin (v1.14.0 or 1.14.0): used exactly. When its files are in the overrides folder, the
//     cache or a local repository nothing is listed and no network is used; otherwise only its
//     metadata.yaml is downloaded. A version that does not exist is a *VersionNotFoundError
//     (errors.Is ErrNotFound) with the nearest available versions.
//   - the version's major.minor must be a series of its own metadata.yaml, else an error.
//
// Contract names and compatibility (v1beta2, v1beta1) live in pkg/contract.
//
// # Components
//
//	comp, err := c.Components(ctx, p, repository.ComponentsOptions{Version: "v1.14.0", TargetNamespace: ""})
//
// runs clusterctl's pipeline (spec §4): resolve the version (its contract must be compatible, else
// ErrContract), fetch the components file, list its variables (pkg/variables, nested defaults
// included), substitute them unless SkipVariables (values from Lookup, default: capctl-set values,
// then the environment, then the config file; every missing variable at once as a
// *variables.MissingError), parse, apply `images:` overrides, collect images, move into the target
// namespace (default: the components' single Namespace; none and no option is an error), label and
// sort for install. *Components carries the Release (version, contract, metadata), URL, File,
// TargetNamespace, Variables, Images, Objects ([]unstructured.Unstructured) and Raw bytes.
//
// CertManager(ctx, version) returns cert-manager's manifests from the config's cert-manager.url and
// version (same repository kinds, cache and overrides; a local URL follows
// {basepath}/cert-manager/{version}/{file}), parsed, image overrides for `cert-manager` applied,
// sorted; labels are left to the installer.
//
// Mirror(ctx, dir, requests, MirrorOptions) copies provider versions (components, metadata,
// cluster templates and classes of infrastructure providers) and cert-manager into a local
// repository and returns a clusterctl.yaml fragment pointing at it.
//
// # Components processing blocks
//
// The building blocks, usable on any YAML: ParseYAML (multi-document; errors name the file and the
// line), InspectTargetNamespace, SetTargetNamespace (namespaced objects, the Namespace object,
// ServiceAccount subjects of (Cluster)RoleBindings, webhook and CRD conversion services,
// cert-manager inject-ca-from annotations, Certificate dnsNames), ApplyImageOverrides (`images:`
// config, `all` < component < component/image), Images, AddLabels (clusterctl.cluster.x-k8s.io
// and cluster.x-k8s.io/provider) and SortForInstall (Namespaces, then cert-manager.io objects,
// then file order: clusterctl's order, see its comment for why CRDs-first/webhooks-last is not
// forced).
package repository
