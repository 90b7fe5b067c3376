package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMissingKubeconfigNamesItsFlag: a missing --to-kubeconfig file is not blamed on --kubeconfig.
func TestMissingKubeconfigNamesItsFlag(t *testing.T) {
	_, _, _, _, err := LoadRESTConfig(Options{Kubeconfig: filepath.Join(t.TempDir(), "nope"), KubeconfigFlag: "--to-kubeconfig"})
	if err == nil || !strings.Contains(err.Error(), "check --to-kubeconfig") || strings.Contains(err.Error(), "check --kubeconfig)") {
		t.Fatalf("missing target kubeconfig: %v", err)
	}
}

// TestBadTokenIsNotUnreachable: a server that answers 401 is reachable; the message says the
// credentials were refused.
func TestBadTokenIsNotUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`))
	}))
	defer srv.Close()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "+srv.URL+"\nusers:\n- name: u\n  user:\n    token: s3cr3t-token-value\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Connect(context.Background(), Options{Kubeconfig: kc, ConnectTimeout: 5 * time.Second})
	if !errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrUnreachable) || strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("bad token: %v", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("the token is printed: %v", err)
	}
}

// TestWrongCAIsNotUnreachable: a server whose certificate the kubeconfig's CA did not sign is
// running: the message says the certificate is not trusted and to get a current kubeconfig, not
// that the cluster may be down.
func TestWrongCAIsNotUnreachable(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"major":"1","minor":"37"}`))
	}))
	defer srv.Close()
	// The kubeconfig names another CA: a self-signed one made here.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "+srv.URL+"\n    certificate-authority-data: "+base64.StdEncoding.EncodeToString(ca)+"\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Connect(context.Background(), Options{Kubeconfig: kc, ConnectTimeout: 5 * time.Second})
	if !errors.Is(err, ErrUntrusted) || errors.Is(err, ErrUnreachable) || strings.Contains(err.Error(), "check that the cluster is running") ||
		!strings.Contains(err.Error(), "answered with a certificate that kubeconfig") || !strings.Contains(err.Error(), "get a current kubeconfig") {
		t.Fatalf("wrong CA: %v", err)
	}
}
