package livemgmt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// Options configure a Host.
type Options struct {
	// Dir holds every cluster's logs, kubeconfig and the managers' files (default: a new
	// temporary folder).
	Dir string
	// Logf receives progress lines (default: discard).
	Logf func(format string, args ...any)
}

// Host is what one program (a test binary, the demo) runs on this machine: its management
// clusters. Where the machine allows it (root, iproute2), each cluster's managers run in a
// network namespace of its own, CAPD included (netns.go). Elsewhere the clusters share one CAPD
// process, since CAPD binds fixed ports (capd.go), and say why.
type Host struct {
	Dir string

	// netnsOff says why the clusters share the host's network ("" when each has a namespace).
	netnsOff string
	ip       string // shared network only: the non-loopback IPv4 the EndpointSlices point at
	certs    certs
	logf     func(string, ...any)

	mu       sync.Mutex
	clusters []*Cluster
	capd     capdSlot
	stopped  bool
	proxyMu  sync.Mutex // orders the API server proxies between namespaces
}

// NewHost prepares a host; StartCluster adds management clusters to it, Stop ends everything.
func NewHost(opts Options) (*Host, error) {
	if missing := Missing(); len(missing) > 0 {
		return nil, fmt.Errorf("live management cluster binaries missing: %v: run `make live-bins`", missing)
	}
	h := &Host{netnsOff: NetnsUnavailable()}
	if h.netnsOff != "" {
		ip, err := hostIP()
		if err != nil {
			return nil, err
		}
		h.ip = ip
	}
	var err error
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "capctl-livemgmt-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	h.Dir, h.logf = dir, logf
	if h.netnsOff != "" {
		logf("management clusters share this host's network and one CAPD process (%s)", h.netnsOff)
	}
	return h, nil
}

// Isolated reports whether each management cluster runs its managers, CAPD included, in a
// network namespace of its own; when not, Shared says why.
func (h *Host) Isolated() bool { return h.netnsOff == "" }

// Shared says why the management clusters share one network and one CAPD ("" when they do not).
func (h *Host) Shared() string { return h.netnsOff }

// hostIP is the first non-loopback IPv4 address: the API server refuses loopback addresses in
// EndpointSlices, and the managers' webhook servers listen on every interface.
func hostIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.To4() == nil || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
			continue
		}
		return n.IP.String(), nil
	}
	return "", errors.New("this host has no non-loopback IPv4 address for the webhook endpoints")
}

// Cluster is one live management cluster: etcd, kube-apiserver, kube-controller-manager, and a
// stand-in kubelet that runs the providers' pods as host processes.
type Cluster struct {
	Name string
	// Dir holds this cluster's logs and files.
	Dir string
	// Kubeconfig is a cluster-admin kubeconfig file (0600).
	Kubeconfig string
	Config     *rest.Config
	Client     client.Client

	host   *Host
	env    *envtest.Environment
	apiURL string // https://127.0.0.1:PORT
	ns     *netNS // nil when the clusters share the host's network
	// proxied: c's API server answers in the other namespaces and theirs in c's (Host.proxyMu)
	proxied bool
	kcm     *process
	cancel  context.CancelFunc
	done    chan struct{}
	kl      *kubelet

	pidMu sync.Mutex
	pids  map[string]int // provider label -> pid of the process running its manager
}

// ManagerPID is the process that runs a provider's manager (LabelDocker: CAPD) for this
// cluster, 0 when none runs. On a shared network the host's one CAPD is not any cluster's own.
func (c *Cluster) ManagerPID(label string) int {
	c.pidMu.Lock()
	defer c.pidMu.Unlock()
	return c.pids[label]
}

// podIP is where the API server reaches this cluster's managers (their webhooks) and the
// stand-in kubelet probes them: the namespace's veth address, or the host's.
func (c *Cluster) podIP() string {
	if c.ns != nil {
		return c.ns.addr
	}
	return c.host.ip
}

// healthHost is the address the managers' /readyz listens on.
func (c *Cluster) healthHost() string {
	if c.ns != nil {
		return c.ns.addr
	}
	return "127.0.0.1"
}

// Namespace is the name of the cluster's network namespace ("" when it shares the host's).
func (c *Cluster) Namespace() string {
	if c.ns == nil {
		return ""
	}
	return c.ns.name
}

// Command is name args... run from this management cluster's network, as a program on one of
// its nodes would be: every API server of the host answers at its usual 127.0.0.1 address, and
// the in-memory workload clusters this cluster's CAPD serves answer at theirs (127.0.0.1:20000
// and up, inside the namespace). Outside the namespace those workload addresses reach nothing,
// or another management cluster's. On a shared network it is a plain command.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if c.ns != nil {
		bin, full := c.ns.command(name, args)
		return exec.CommandContext(ctx, bin, full...)
	}
	return exec.CommandContext(ctx, name, args...)
}

// StartCluster starts a management cluster and waits until its API server and
// kube-controller-manager are ready. Nothing of Cluster API is installed: run `capctl init`
// against Kubeconfig, and the kubelet stand-in runs the managers init's Deployments ask for.
func (h *Host) StartCluster(ctx context.Context, name string) (*Cluster, error) {
	c := &Cluster{Name: name, Dir: filepath.Join(h.Dir, name), host: h, done: make(chan struct{})}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return nil, errors.New("host stopped")
	}
	h.clusters = append(h.clusters, c)
	h.mu.Unlock()
	if err := c.start(ctx); err != nil {
		c.stop()
		return nil, fmt.Errorf("management cluster %s: %w (logs in %s)", name, err, c.Dir)
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	start := time.Now()
	etcdLog, err := os.OpenFile(filepath.Join(c.Dir, "etcd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	apiLog, err := os.OpenFile(filepath.Join(c.Dir, "kube-apiserver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	var cfg *rest.Config
	for attempt := 1; attempt <= 2; attempt++ {
		te := &envtest.Environment{
			BinaryAssetsDirectory:    testenv.AssetsDir(),
			ControlPlaneStartTimeout: 2 * time.Minute,
			ControlPlaneStopTimeout:  time.Minute,
		}
		te.ControlPlane.Etcd = &envtest.Etcd{Out: etcdLog, Err: etcdLog}
		if err := testenv.UseServerBinaries(te); err != nil {
			return err
		}
		api := te.ControlPlane.GetAPIServer()
		api.Out, api.Err = apiLog, apiLog
		// Webhook and conversion calls to a Service go to one of its EndpointSlices' endpoints,
		// as an API server without a cluster network (no kube-proxy for ClusterIPs) needs.
		api.Configure().Append("enable-aggregator-routing", "true")
		api.Configure().Append("allow-privileged", "true")
		if cfg, err = te.Start(); err == nil {
			c.env = te
			break
		}
		_ = te.Stop()
	}
	if err != nil {
		return fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	user, err := c.env.AddUser(envtest.User{Name: "livemgmt-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding an admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, kc, 0o600); err != nil {
		return err
	}
	c.Config = user.Config()
	c.apiURL = c.Config.Host
	c.Config.QPS, c.Config.Burst = 50, 100
	if c.Client, err = client.New(c.Config, client.Options{}); err != nil {
		return err
	}
	_ = cfg
	if c.host.netnsOff == "" {
		if c.ns, err = allocNetns(); err != nil {
			return err
		}
		if err := c.host.joinProxies(c); err != nil {
			return err
		}
	}
	if err := c.startKCM(ctx); err != nil {
		return err
	}
	kctx, cancel := context.WithCancel(context.Background())
	informers, err := cache.New(c.Config, cache.Options{Scheme: c.Client.Scheme(), Mapper: c.Client.RESTMapper()})
	if err != nil {
		cancel()
		return fmt.Errorf("the kubelet stand-in's informers: %w", err)
	}
	c.cancel = cancel
	c.kl = newKubelet(c, informers)
	informersDone := make(chan struct{})
	go func() {
		defer close(informersDone)
		_ = informers.Start(kctx)
	}()
	go func() {
		defer close(c.done)
		c.kl.run(kctx)
		<-informersDone
	}()
	c.host.logf("management cluster %s ready in %s (kubeconfig %s)", c.Name, time.Since(start).Round(100*time.Millisecond), c.Kubeconfig)
	return nil
}

// startKCM runs kube-controller-manager: garbage collection, the namespace controller, and the
// Deployment/ReplicaSet controllers that turn the providers' Deployments into pods.
func (c *Cluster) startKCM(ctx context.Context) error {
	bin := filepath.Join(testenv.AssetsDir(), "kube-controller-manager")
	certDir := filepath.Join(c.Dir, "kcm-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	apiCertDir := c.env.ControlPlane.APIServer.CertDir
	for attempt := 1; ; attempt++ {
		port, err := hostPorts.get()
		if err != nil {
			return err
		}
		args := []string{
			"--kubeconfig=" + c.Kubeconfig,
			"--authentication-kubeconfig=" + c.Kubeconfig,
			"--authorization-kubeconfig=" + c.Kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", port),
			"--cert-dir=" + certDir,
			"--controllers=*",
			"--use-service-account-credentials=false",
		}
		// The service-account token controller and the kube-root-ca.crt publisher, when envtest
		// left the files they need.
		if key := filepath.Join(apiCertDir, "sa-signer.key"); isFile(key) {
			args = append(args, "--service-account-private-key-file="+key)
		}
		if ca := filepath.Join(apiCertDir, "apiserver.crt"); isFile(ca) {
			args = append(args, "--root-ca-file="+ca)
		}
		p, err := startProcess("kube-controller-manager", bin, args, testenv.ServerEnv(os.Environ()), filepath.Join(c.Dir, "kube-controller-manager.log"))
		if err != nil {
			return err
		}
		err = p.waitHTTP(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), 2*time.Minute)
		if err == nil {
			c.kcm = p
			return nil
		}
		p.stop(5 * time.Second)
		if p.portInUse() && attempt < 3 {
			continue
		}
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
}

// StopAPIServer stops this cluster's kube-apiserver alone, as an outage would: etcd, the
// managers and kube-controller-manager keep running (and retrying). For tests of what a command
// over several management clusters does when one cannot be reached; there is no restart, and
// Host.Stop still ends everything.
func (c *Cluster) StopAPIServer() error {
	if c.env == nil || c.env.ControlPlane.APIServer == nil {
		return fmt.Errorf("%s: no API server runs", c.Name)
	}
	// With the managers' watches open the server may outlast envtest's stop timeout; envtest
	// then kills it and reports the timeout. Either way the outage is there once the port
	// refuses connections.
	stopErr := c.env.ControlPlane.APIServer.Stop()
	u, err := url.Parse(c.apiURL)
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		conn, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err != nil {
			return nil
		}
		conn.Close()
	}
	return fmt.Errorf("%s: the API server at %s still answers after stopping it: %v", c.Name, c.apiURL, stopErr)
}

// stop ends the kubelet stand-in (and with it the managers it runs), kube-controller-manager,
// kube-apiserver and etcd, in that order.
func (c *Cluster) stop() {
	if c.cancel != nil {
		c.cancel()
		<-c.done
		c.cancel = nil
	}
	if c.kcm != nil {
		c.kcm.stop(10 * time.Second)
		c.kcm = nil
	}
	if c.env != nil {
		_ = c.env.Stop()
		c.env = nil
	}
	if c.ns != nil {
		c.ns.release()
		c.ns = nil
	}
}

// joinProxies makes c's API server answer in every other cluster's namespace and every other
// cluster's API server in c's, so a manager or a command in any of them reaches them all (a
// move's source and target) at the addresses of their kubeconfigs.
func (h *Host) joinProxies(c *Cluster) error {
	h.proxyMu.Lock()
	defer h.proxyMu.Unlock()
	h.mu.Lock()
	others := []*Cluster{}
	for _, o := range h.clusters {
		if o != c && o.proxied {
			others = append(others, o)
		}
	}
	h.mu.Unlock()
	if err := c.ns.proxyLoopback(hostPort(c.apiURL)); err != nil {
		return err
	}
	for _, o := range others {
		if err := o.ns.proxyLoopback(hostPort(c.apiURL)); err != nil {
			return err
		}
		if err := c.ns.proxyLoopback(hostPort(o.apiURL)); err != nil {
			return err
		}
	}
	c.proxied = true
	return nil
}

// hostPort is the host:port of a URL such as https://127.0.0.1:6443.
func hostPort(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		return u.Host
	}
	return rawURL
}

// Stop stops every cluster and process the host started. Safe to call more than once.
func (h *Host) Stop() {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.stopped = true
	clusters := append([]*Cluster(nil), h.clusters...)
	h.mu.Unlock()
	h.stopCAPD()
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Add(1)
		go func() { defer wg.Done(); c.stop() }()
	}
	wg.Wait()
}
