package templates

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/capctl/capctl/internal/logging"
)

// TestFetchSendsTheTokenOnlyOverHTTPSToGitHub: GITHUB_TOKEN goes to the raw GitHub host over
// HTTPS, never over plain HTTP (even when the raw URL is overridden to an http:// address) and
// never to another host; a dropped token is explained on stderr.
func TestFetchSendsTheTokenOnlyOverHTTPSToGitHub(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte("kind: ConfigMap\n"))
	})
	plain := httptest.NewServer(handler)
	defer plain.Close()
	tls := httptest.NewTLSServer(handler)
	defer tls.Close()
	last := func() string {
		mu.Lock()
		defer mu.Unlock()
		return auth[len(auth)-1]
	}
	const blob = "https://github.com/acme/templates/blob/main/t.yaml"
	ctx := context.Background()

	var logs bytes.Buffer
	opts := FetchOptions{GitHubToken: "ghp_secret", RawGitHubURL: plain.URL, Log: logging.New(&logs, 0)}
	if _, _, err := Fetch(ctx, blob, opts); err != nil {
		t.Fatal(err)
	}
	if got := last(); got != "" {
		t.Errorf("the token went over plain HTTP: %q", got)
	}
	if !strings.Contains(logs.String(), "GITHUB_TOKEN") || !strings.Contains(logs.String(), "not HTTPS") || strings.Contains(logs.String(), "ghp_secret") {
		t.Errorf("the dropped token is not explained (or is printed):\n%s", logs.String())
	}

	opts = FetchOptions{GitHubToken: "ghp_secret", RawGitHubURL: tls.URL, HTTPClient: tls.Client()}
	if _, _, err := Fetch(ctx, blob, opts); err != nil {
		t.Fatal(err)
	}
	if got := last(); got != "token ghp_secret" {
		t.Errorf("over HTTPS to the raw host the token was not sent: %q", got)
	}
	// Another HTTPS host than GitHub's: no token.
	if _, _, err := Fetch(ctx, tls.URL+"/t.yaml", opts); err != nil {
		t.Fatal(err)
	}
	if got := last(); got != "" {
		t.Errorf("the token went to a host it is not for: %q", got)
	}
}
