package livemgmt

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"sort"
	"strings"
	"sync"
	"time"
)

// servingCert is a self-signed serving certificate, as cert-manager issues for the providers'
// Certificates (their Issuers are selfSigned): ca.crt is the certificate itself.
type servingCert struct {
	certPEM, keyPEM []byte
}

// certs issues serving certificates, one per set of DNS names for the whole host: the one CAPD
// process serves the webhooks of every management cluster, so each cluster's CA bundle for
// capd-webhook-service must be the certificate that process presents.
type certs struct {
	mu    sync.Mutex
	byKey map[string]*servingCert
}

func (c *certs) get(commonName string, dnsNames []string) (*servingCert, error) {
	names := append([]string(nil), dnsNames...)
	sort.Strings(names)
	key := strings.Join(names, ",")
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc, ok := c.byKey[key]; ok {
		return sc, nil
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	if commonName == "" && len(names) > 0 {
		commonName = names[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"capctl livemgmt"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(90 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return nil, err
	}
	sc := &servingCert{
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	if c.byKey == nil {
		c.byKey = map[string]*servingCert{}
	}
	c.byKey[key] = sc
	return sc, nil
}
