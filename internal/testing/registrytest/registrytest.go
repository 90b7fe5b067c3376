// Package registrytest runs a real OCI registry (CNCF distribution, built by `make registry-bin`)
// on loopback for the tests: TLS with a CA the test makes, htpasswd authentication, storage in a
// temporary folder, and a Docker config that holds its credential, as `docker login` writes one.
package registrytest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/bcrypt"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// Registry is one running registry.
type Registry struct {
	// Host is 127.0.0.1:PORT.
	Host string
	// CAFile is the PEM of the CA its serving certificate chains to (give it as OCI_CA_FILE).
	CAFile string
	// DockerConfig is a folder with a config.json holding the credential (give it as DOCKER_CONFIG).
	DockerConfig string
	// User and Password are the htpasswd credential.
	User, Password string
}

// Start runs a registry until the test ends. Of the integration tier (skips under -short, and
// follows testenv.Require when the binary is missing).
func Start(tb testing.TB) *Registry {
	tb.Helper()
	bin := testenv.RegistryBinary(tb)
	dir := tb.TempDir()
	r := &Registry{User: "capctl", Password: "pw-" + randomHex(tb, 12)}
	caPEM, certPEM, keyPEM := certificates(tb)
	r.CAFile = filepath.Join(dir, "ca.pem")
	write(tb, r.CAFile, caPEM)
	write(tb, filepath.Join(dir, "tls.crt"), certPEM)
	write(tb, filepath.Join(dir, "tls.key"), keyPEM)
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
	if err != nil {
		tb.Fatal(err)
	}
	write(tb, filepath.Join(dir, "htpasswd"), []byte(r.User+":"+string(hash)+"\n"))

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	// The registry cannot listen on port 0 and say which port it got: pick a free one, and pick
	// again if another process took it first.
	for attempt := 0; attempt < 3; attempt++ {
		r.Host = freeLoopbackAddr(tb)
		cfg := filepath.Join(dir, "config.yml")
		write(tb, cfg, []byte(fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
  tls:
    certificate: %s
    key: %s
auth:
  htpasswd:
    realm: capctl-test
    path: %s
`, filepath.Join(dir, "data"), r.Host, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "htpasswd"))))
		logFile, err := os.Create(filepath.Join(dir, fmt.Sprintf("registry-%d.log", attempt)))
		if err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command(bin, "serve", cfg)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if waitReady(probe, "https://"+r.Host+"/v2/", exited) {
			tb.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
				logFile.Close()
			})
			r.DockerConfig = filepath.Join(dir, "docker")
			auth := base64.StdEncoding.EncodeToString([]byte(r.User + ":" + r.Password))
			cfgJSON, _ := json.Marshal(map[string]any{"auths": map[string]any{r.Host: map[string]string{"auth": auth}}})
			write(tb, filepath.Join(r.DockerConfig, "config.json"), cfgJSON)
			return r
		}
		_ = cmd.Process.Kill()
		<-exited
		logFile.Close()
	}
	log, _ := os.ReadFile(filepath.Join(dir, "registry-2.log"))
	tb.Fatalf("the registry did not start on loopback:\n%s", log)
	return nil
}

// waitReady waits for /v2/ to answer 401 (up, asking for the credential) for up to 30 s.
func waitReady(c *http.Client, url string, exited <-chan struct{}) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return true
			}
		}
		select {
		case <-exited:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func freeLoopbackAddr(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// certificates makes a CA and a serving certificate for 127.0.0.1 signed by it.
func certificates(tb testing.TB) (caPEM, certPEM, keyPEM []byte) {
	tb.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "capctl test registry CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func randomHex(tb testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// write creates p (and its folder) 0600: keys, credentials and hashes among them.
func write(tb testing.TB, p string, data []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// Trust writes, for several registries, one Docker config holding every credential and one PEM
// file of every CA: what a machine that logged in to each of them has (DOCKER_CONFIG and
// OCI_CA_FILE).
func Trust(tb testing.TB, regs ...*Registry) (dockerConfig, caFile string) {
	tb.Helper()
	dir := tb.TempDir()
	auths := map[string]any{}
	var cas []byte
	for _, r := range regs {
		auths[r.Host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(r.User + ":" + r.Password))}
		pem, err := os.ReadFile(r.CAFile)
		if err != nil {
			tb.Fatal(err)
		}
		cas = append(cas, pem...)
	}
	cfgJSON, _ := json.Marshal(map[string]any{"auths": auths})
	write(tb, filepath.Join(dir, "docker", "config.json"), cfgJSON)
	write(tb, filepath.Join(dir, "ca.pem"), cas)
	return filepath.Join(dir, "docker"), filepath.Join(dir, "ca.pem")
}

// PushRandomImage pushes a small random single-layer image to ref (HOST/PATH:TAG) of r and
// returns its digest.
func (r *Registry) PushRandomImage(tb testing.TB, ref string) string {
	tb.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		tb.Fatal(err)
	}
	n, err := name.ParseReference(ref)
	if err != nil {
		tb.Fatal(err)
	}
	if err := remote.Write(n, img, remote.WithTransport(r.HTTPClient(tb).Transport), remote.WithAuth(&authn.Basic{Username: r.User, Password: r.Password})); err != nil {
		tb.Fatalf("pushing %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		tb.Fatal(err)
	}
	return d.String()
}

// HTTPClient trusts the registry's CA (for pushing with oras-go or go-containerregistry in a test).
func (r *Registry) HTTPClient(tb testing.TB) *http.Client {
	tb.Helper()
	caPEM, err := os.ReadFile(r.CAFile)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}
