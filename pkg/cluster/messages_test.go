package cluster

import (
	"context"
	"errors"
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
