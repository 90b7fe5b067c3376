package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/internal/version"
)

// Defaults for the REST client. clusterctl v1.14 raised QPS/burst to 500/1000 because CRD-heavy
// clusters starved its rate limiter; capctl does bulk work (move, describe) with the same budget.
const (
	DefaultQPS            = 500
	DefaultBurst          = 1000
	DefaultRequestTimeout = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
)

// Options select a cluster and tune the client.
type Options struct {
	// Kubeconfig is an explicit kubeconfig path (--kubeconfig). Empty follows client-go's rules:
	// the KUBECONFIG list, then ~/.kube/config.
	Kubeconfig string
	// Context is the kubeconfig context (--kubeconfig-context); empty uses the current context.
	Context string
	// KubeconfigFlag is the flag that gave Kubeconfig, for messages (default --kubeconfig; a
	// move's target is --to-kubeconfig).
	KubeconfigFlag string
	// ConnectTimeout bounds the reachability check in Connect (default 10 s).
	ConnectTimeout time.Duration
	// QPS and Burst override the client rate limits (defaults 500/1000).
	QPS   float32
	Burst int
	// Scheme overrides the scheme (default: client-go's scheme plus apiextensions).
	Scheme *runtime.Scheme
	// WarningHandler receives the API server's warnings (deprecated kinds, ...); nil keeps
	// controller-runtime's default, which logs through its logger.
	WarningHandler rest.WarningHandler
	// OnRequest, when set, is told about every HTTP request the client sends (verbose logs).
	OnRequest func(method, url string, status int, elapsed time.Duration, err error)
	// ReadOnly refuses, before sending, every request but reads, self-reviews and server-side
	// dry runs (ReadOnlyAllows): a front end that must not change a cluster sets it.
	ReadOnly bool
}

// Client is a connection to one management cluster. Build one per run and share it: it holds one
// HTTP client and one lazily-filled REST mapper, so discovery is paid once.
type Client struct {
	client.Client
	Config    *rest.Config
	Mapper    meta.RESTMapper
	Discovery discovery.DiscoveryInterface

	// Where it came from, for error messages.
	KubeconfigPath string
	ContextName    string
	Namespace      string // the context's namespace, or "default"

	requests *atomic.Int64
}

// Scheme is the scheme typed objects are read with: core Kubernetes kinds and CRDs. Cluster API
// objects are handled as unstructured data so both v1beta1 and v1beta2 clusters are readable.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	return s
}

// LoadRESTConfig resolves kubeconfig and context into a REST config, with errors that name the
// kubeconfig file(s) and list the contexts that do exist.
func LoadRESTConfig(opts Options) (*rest.Config, string, string, string, error) {
	flag := opts.KubeconfigFlag
	if flag == "" {
		flag = "--kubeconfig"
	}
	ctxFlag := flag + "-context"
	raw, rules, files, err := loadKubeconfig(opts.Kubeconfig, flag)
	if err != nil {
		return nil, "", "", "", err
	}
	ctxName := opts.Context
	if ctxName == "" {
		ctxName = raw.CurrentContext
	}
	if len(raw.Contexts) == 0 {
		return nil, files, "", "", fmt.Errorf("no usable kubeconfig: %s has no contexts; pass %s or set KUBECONFIG", files, flag)
	}
	kctx, ok := raw.Contexts[ctxName]
	if !ok {
		if ctxName == "" {
			return nil, files, "", "", fmt.Errorf("kubeconfig %s has no current context; pass %s (contexts: %s)", files, ctxFlag, contextNames(raw))
		}
		return nil, files, ctxName, "", fmt.Errorf("context %q not found in kubeconfig %s (contexts: %s); pass %s", ctxName, files, contextNames(raw), ctxFlag)
	}
	cc := clientcmd.NewNonInteractiveClientConfig(*raw, ctxName, &clientcmd.ConfigOverrides{}, rules)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, files, ctxName, "", fmt.Errorf("kubeconfig %s, context %q: %w", files, ctxName, err)
	}
	ns := kctx.Namespace
	if ns == "" {
		ns = "default"
	}
	return cfg, files, ctxName, ns, nil
}

// Kubeconfig is the kubeconfig as client-go's loading rules merge it (--kubeconfig, else the
// KUBECONFIG list of files, else ~/.kube/config), and the file(s) it came from, for messages.
type Kubeconfig struct {
	Config *clientcmdapi.Config
	Files  string
}

// LoadKubeconfig reads the kubeconfig without choosing a context (commands over several
// management clusters pick theirs from it).
func LoadKubeconfig(explicitPath string) (*Kubeconfig, error) {
	raw, _, files, err := loadKubeconfig(explicitPath, "--kubeconfig")
	if err != nil {
		return nil, err
	}
	return &Kubeconfig{Config: raw, Files: files}, nil
}

// ContextNames are the kubeconfig's contexts, sorted.
func (k *Kubeconfig) ContextNames() []string {
	names := make([]string, 0, len(k.Config.Contexts))
	for n := range k.Config.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func loadKubeconfig(explicitPath, flag string) (*clientcmdapi.Config, *clientcmd.ClientConfigLoadingRules, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if explicitPath != "" {
		rules.ExplicitPath = explicitPath
	}
	files := describeFiles(rules)
	if explicitPath != "" {
		special, err := kubeconfigFile(explicitPath)
		if err != nil {
			return nil, nil, "", fmt.Errorf("kubeconfig %s: %w (check %s)", explicitPath, err, flag)
		}
		if special {
			raw, err := loadSpecialKubeconfig(explicitPath)
			return raw, rules, files, err
		}
	} else {
		for _, p := range rules.Precedence {
			special, err := kubeconfigFile(p)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				// client-go skips missing files of the list
			case err != nil:
				return nil, nil, "", fmt.Errorf("kubeconfig %s: %w", p, err)
			case special:
				return nil, nil, "", fmt.Errorf("kubeconfig %s (from KUBECONFIG or the default path) is not a regular file: pass a special file with --kubeconfig, which reads it within the input bound", p)
			}
		}
	}
	raw, err := rules.Load()
	if err != nil {
		return nil, nil, "", fmt.Errorf("loading kubeconfig %s: %w", files, err)
	}
	return raw, rules, files, nil
}

// A kubeconfig is a file a user hands us, bounded like every other (userinput.Max): client-go
// would read /dev/zero or an endless pipe until the process ran out of memory. kubeconfigFile
// checks a regular file by its size (client-go's loading rules then read it) and reports a
// special file (a FIFO from process substitution, /dev/stdin, a device), which only
// loadSpecialKubeconfig may read.
func kubeconfigFile(path string) (special bool, err error) {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return false, err
	case !st.Mode().IsRegular():
		return true, nil
	case st.Size() > userinput.Max():
		return false, &userinput.TooLargeError{Name: path, Limit: userinput.Max(), Flag: userinput.Flag}
	}
	return false, nil
}

// loadSpecialKubeconfig reads a special file named with --kubeconfig within the input bound and
// loads it as client-go's loading rules load a file: its entries know their file, and relative
// paths in them are resolved against its folder.
func loadSpecialKubeconfig(path string) (*clientcmdapi.Config, error) {
	data, err := userinput.ReadFile(context.Background(), path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	raw, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	for _, c := range raw.Clusters {
		c.LocationOfOrigin = path
	}
	for _, a := range raw.AuthInfos {
		a.LocationOfOrigin = path
	}
	for _, c := range raw.Contexts {
		c.LocationOfOrigin = path
	}
	if err := clientcmd.ResolveLocalPaths(raw); err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return raw, nil
}

func describeFiles(rules *clientcmd.ClientConfigLoadingRules) string {
	if rules.ExplicitPath != "" {
		return rules.ExplicitPath
	}
	var existing []string
	for _, p := range rules.Precedence {
		if _, err := os.Stat(p); err == nil {
			existing = append(existing, p)
		}
	}
	if len(existing) == 0 {
		return strings.Join(rules.Precedence, string(os.PathListSeparator)) + " (none exists)"
	}
	return strings.Join(existing, string(os.PathListSeparator))
}

func contextNames(cfg *clientcmdapi.Config) string {
	names := (&Kubeconfig{Config: cfg}).ContextNames()
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// New builds a client without contacting the server.
func New(opts Options) (*Client, error) {
	cfg, files, ctxName, ns, err := LoadRESTConfig(opts)
	if err != nil {
		return nil, err
	}
	return NewForConfig(cfg, opts, files, ctxName, ns)
}

// NewForConfig builds a client from a REST config (tests, or a target cluster of a move).
func NewForConfig(cfg *rest.Config, opts Options, kubeconfigPath, contextName, namespace string) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	if opts.QPS > 0 {
		cfg.QPS = opts.QPS
	}
	if opts.Burst > 0 {
		cfg.Burst = opts.Burst
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultRequestTimeout
	}
	cfg.UserAgent = version.UserAgent()
	if opts.WarningHandler != nil {
		cfg.WarningHandler = opts.WarningHandler
	} else if cfg.WarningHandler == nil && cfg.WarningHandlerWithContext == nil {
		// The handler controller-runtime's client would install, set here so that requests through
		// REST and Discovery treat warnings alike (client-go's default would print them to stderr).
		cfg.WarningHandlerWithContext = crlog.NewKubeAPIWarningLogger(crlog.KubeAPIWarningLoggerOptions{})
	}
	counter := &atomic.Int64{}
	prevWrap := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prevWrap != nil {
			rt = prevWrap(rt)
		}
		rt = countingTransport{next: rt, n: counter, onRequest: opts.OnRequest}
		if opts.ReadOnly {
			rt = readOnlyTransport{next: rt}
		}
		return rt
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building HTTP client for %s: %w", cfg.Host, err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building REST mapper for %s: %w", cfg.Host, err)
	}
	scheme := opts.Scheme
	if scheme == nil {
		scheme = Scheme()
	}
	// A client that can also watch (WaitEstablished watches CRDs), on the same HTTP client.
	c, err := client.NewWithWatch(cfg, client.Options{HTTPClient: httpClient, Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("building client for %s: %w", cfg.Host, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building discovery client for %s: %w", cfg.Host, err)
	}
	if namespace == "" {
		namespace = "default"
	}
	return &Client{
		Client: c, Config: cfg, Mapper: mapper, Discovery: disco,
		KubeconfigPath: kubeconfigPath, ContextName: contextName, Namespace: namespace,
		requests: counter,
	}, nil
}

// Connect builds a client and checks, within ConnectTimeout, that the API server answers.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	timeout := opts.ConnectTimeout
	if timeout == 0 {
		timeout = DefaultConnectTimeout
	}
	if err := c.Ping(ctx, timeout); err != nil {
		return nil, err
	}
	return c, nil
}

// ErrUnreachable marks a failed reachability check.
var ErrUnreachable = errors.New("management cluster unreachable")

// ErrUnauthorized marks a server that answered the reachability check but refused the
// credentials (HTTP 401, or 403 on /version, which every authenticated user may read).
var ErrUnauthorized = errors.New("management cluster refused the credentials")

// Ping asks the server for its version within timeout, and says where it looked when it fails.
func (c *Client) Ping(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := c.Discovery.RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("no answer within %s", timeout)
	} else if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
		// The server answered: it is reachable, the credentials are what it refuses.
		return fmt.Errorf("%w: the API server %s refused the credentials of kubeconfig %s, context %q (%v): the token or certificate is wrong or expired; renew the kubeconfig",
			ErrUnauthorized, c.Config.Host, c.KubeconfigPath, c.ContextName, err)
	}
	if why := untrusted(err); why != "" {
		// The server answered, with a certificate the kubeconfig does not trust: it is running;
		// the kubeconfig (or what answers at that address) is what is wrong.
		return fmt.Errorf("%w: the API server %s answered with a certificate that kubeconfig %s, context %q does not trust (%s: %v): "+
			"the kubeconfig's certificate-authority-data is not this server's CA, or another server answers at that address; get a current kubeconfig for the cluster (capctl does not skip this check)",
			ErrUntrusted, c.Config.Host, c.KubeconfigPath, c.ContextName, why, err)
	}
	return fmt.Errorf("%w: cannot reach the API server %s (kubeconfig %s, context %q): %v; check that the cluster is running and the kubeconfig is current",
		ErrUnreachable, c.Config.Host, c.KubeconfigPath, c.ContextName, err)
}

// ErrUntrusted marks a server that answered the reachability check with a TLS certificate the
// kubeconfig does not trust.
var ErrUntrusted = errors.New("management cluster's certificate is not trusted")

// untrusted says why err is a failed verification of the server's certificate (empty when it
// is not one).
func untrusted(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return "signed by an authority the kubeconfig does not name"
	case errors.As(err, &host):
		return "issued for another host name"
	case errors.As(err, &invalid):
		return "invalid or expired"
	case errors.As(err, &verify):
		return "not verified"
	}
	return ""
}

// REST is a REST client for the server's root paths, on the same connection, rate limits and
// request count as the rest of the client: for reads that decode the server's JSON themselves
// (describe's lean lists) instead of through the generic decoders.
func (c *Client) REST() rest.Interface { return c.Discovery.RESTClient() }

// Requests is the number of HTTP requests this client has sent so far.
func (c *Client) Requests() int64 { return c.requests.Load() }

type countingTransport struct {
	next      http.RoundTripper
	n         *atomic.Int64
	onRequest func(method, url string, status int, elapsed time.Duration, err error)
}

// WrappedRoundTripper lets client-go reach the transport beneath: when a request's timeout fires,
// it walks the wrappers to the one that can cancel, and logs a warning at every wrapper it cannot
// see through (one line per timed-out request, in the middle of init's output on a slow server).
func (t countingTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	if t.onRequest == nil {
		return t.next.RoundTrip(r)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(r)
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	t.onRequest(r.Method, r.URL.String(), status, time.Since(start), err)
	return resp, err
}

// Kubernetes is a client-go clientset over the same configuration (rate limits, request
// counting, read-only guard), for what controller-runtime's client does not do: pod logs.
func (c *Client) Kubernetes() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(c.Config)
}
