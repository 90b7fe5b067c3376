package repository

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// CredentialRefusal says why a credential must not go with a request to u, or "" when it may:
// credentials travel only over HTTPS, and only to the hosts they are for (host or host:port).
func CredentialRefusal(u *url.URL, hosts ...string) string {
	if !strings.EqualFold(u.Scheme, "https") {
		return fmt.Sprintf("%s://%s is not HTTPS, and credentials are never sent in clear", u.Scheme, u.Host)
	}
	for _, h := range hosts {
		if strings.EqualFold(u.Host, h) || strings.EqualFold(u.Hostname(), h) {
			return ""
		}
	}
	return fmt.Sprintf("%s is not %s, the host the credential is for", u.Host, strings.Join(hosts, " or "))
}

// WithCredential returns a copy of hc that sets header to value on requests CredentialRefusal
// allows for hosts, and on no other: every redirect hop is checked again, so a redirect to
// plain HTTP or another host goes out without it. The first refusal per host is passed to warn
// (naming the credential by what, never by value).
func WithCredential(hc *http.Client, what, header, value string, hosts []string, warn func(msg string)) *http.Client {
	if value == "" {
		return hc
	}
	if hc == nil {
		hc = &http.Client{}
	}
	out := *hc
	out.Transport = &credentialTransport{base: hc.Transport, what: what, header: header, value: value, hosts: hosts, warn: warn, warned: map[string]bool{}}
	return &out
}

// bearer is the Authorization value of a token, "" for no token.
func bearer(token string) string {
	if token == "" {
		return ""
	}
	return "Bearer " + token
}

type credentialTransport struct {
	base          http.RoundTripper
	what          string
	header, value string
	hosts         []string
	warn          func(string)

	mu     sync.Mutex
	warned map[string]bool
}

func (t *credentialTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if why := CredentialRefusal(req.URL, t.hosts...); why != "" {
		t.mu.Lock()
		first := !t.warned[req.URL.Scheme+"://"+req.URL.Host]
		t.warned[req.URL.Scheme+"://"+req.URL.Host] = true
		t.mu.Unlock()
		if first && t.warn != nil {
			t.warn(fmt.Sprintf("%s is not sent to %s://%s: %s; the request goes unauthenticated", t.what, req.URL.Scheme, req.URL.Host, why))
		}
		return base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set(t.header, t.value)
	return base.RoundTrip(r)
}
