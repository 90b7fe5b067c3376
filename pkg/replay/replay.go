// Package replay records the reads a read-only view makes of a management cluster's API server,
// and answers them again later with no server: a support bundle keeps the record, and
// `describe`/`diagnose --from-bundle` run the same code over it, so the offline output is the
// output the live cluster gave when the bundle was made.
//
// The record is taken at the HTTP layer, beneath client-go and controller-runtime: discovery, the
// REST mapper, typed, unstructured, metadata-only and describe's lean lists are all answered the
// way the server answered them, with no model of the objects to keep in step. A read the record
// holds no exact answer to is answered from a complete list of the same resource the record
// holds (filtered by namespace, labels and name, as the API server would), else refused with an
// error naming it: never an invented empty answer. Secrets are never recorded.
package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// FormatVersion is the version of the Recording layout.
const FormatVersion = 1

// Recording is the record of one session of reads: every GET the API server answered.
type Recording struct {
	Version   int        `json:"version"`
	Exchanges []Exchange `json:"exchanges"`
}

// Exchange is one request and the server's answer.
type Exchange struct {
	Path string `json:"path"`
	// Query is the canonical query (sorted; client-go's timeout left out).
	Query  string `json:"query,omitempty"`
	Accept string `json:"accept,omitempty"`
	Status int    `json:"status"`
	// ContentType is the answer's media type; Body is the answer when it is JSON, BodyBytes
	// otherwise (protobuf).
	ContentType string          `json:"contentType,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
	BodyBytes   []byte          `json:"bodyBytes,omitempty"`
}

func (x *Exchange) body() []byte {
	if x.Body != nil {
		return x.Body
	}
	return x.BodyBytes
}

// Recorder keeps every read that passes through the transports it wraps (Wrap).
type Recorder struct {
	mu   sync.Mutex
	rec  map[string]*Exchange
	keys []string
}

// NewRecorder is an empty record.
func NewRecorder() *Recorder { return &Recorder{rec: map[string]*Exchange{}} }

// Wrap is a rest.Config WrapTransport: next, recording what the server answered. It refuses
// anything but GET: a recorded session only reads.
func (r *Recorder) Wrap(next http.RoundTripper) http.RoundTripper {
	return &recording{r: r, next: next}
}

type recording struct {
	r    *Recorder
	next http.RoundTripper
}

// WrappedRoundTripper lets client-go reach the transport beneath (to cancel a timed-out request).
func (t *recording) WrappedRoundTripper() http.RoundTripper { return t.next }

// RoundTrip passes a GET on and records the answer (Secrets excepted).
func (t *recording) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return nil, fmt.Errorf("a recorded session only reads: %s %s refused", req.Method, req.URL.Path)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || isSecretPath(req.URL.Path) {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	x := &Exchange{Path: req.URL.Path, Query: canonicalQuery(req.URL.Query()), Accept: req.Header.Get("Accept"),
		Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type")}
	if strings.HasPrefix(x.ContentType, "application/json") && json.Valid(body) {
		x.Body = json.RawMessage(redactCABundles(body))
	} else {
		x.BodyBytes = body
	}
	k := key(x.Path, x.Query, x.Accept)
	t.r.mu.Lock()
	if _, seen := t.r.rec[k]; !seen {
		t.r.keys = append(t.r.keys, k)
	}
	t.r.rec[k] = x
	t.r.mu.Unlock()
	return resp, nil
}

// RedactedCABundle stands in the record for every caBundle (webhook and conversion clientConfigs):
// cert-manager injects them from the webhook certificates' Secrets, which a bundle never holds.
// Its checks only ask whether one was injected, which the stand-in still answers.
const RedactedCABundle = "cmVkYWN0ZWQ=" // base64 of "redacted"

// redactCABundles is body with every non-empty "caBundle" string replaced by RedactedCABundle
// (numbers kept exact); body itself when it has none.
func redactCABundles(body []byte) []byte {
	if !bytes.Contains(body, []byte(`"caBundle"`)) {
		return body
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return body
	}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				if s, ok := e.(string); ok && k == "caBundle" && s != "" {
					t[k] = RedactedCABundle
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return body
	}
	return out
}

// Recording is what was recorded so far, in a stable order.
func (r *Recorder) Recording() *Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := append([]string(nil), r.keys...)
	sort.Strings(keys)
	out := &Recording{Version: FormatVersion, Exchanges: make([]Exchange, 0, len(keys))}
	for _, k := range keys {
		out.Exchanges = append(out.Exchanges, *r.rec[k])
	}
	return out
}

// isSecretPath tells whether a path reads core Secrets: never recorded, never answered.
func isSecretPath(p string) bool {
	r, ok := parsePath(p)
	return ok && r.group == "" && r.resource == "secrets"
}

// canonicalQuery is the query sorted, without client-go's per-request timeout.
func canonicalQuery(q url.Values) string {
	q = cloneValues(q)
	q.Del("timeout")
	return q.Encode()
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func key(path, query, accept string) string { return path + "?" + query + " " + accept }
