package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/capctl/capctl/pkg/cluster"
)

// NotRecordedError is a read the recording holds no answer to.
type NotRecordedError struct{ Read string }

func (e *NotRecordedError) Error() string {
	return fmt.Sprintf("the bundle holds no answer to GET %s: it was not read when the bundle was made (make a bundle whose selection covers it, or run the command against the management cluster)", e.Read)
}

// ErrSecret is the answer to any read of Secrets: a bundle never holds them.
var ErrSecret = errors.New("a support bundle holds no Secret: Secrets are never bundled")

// Transport answers reads from a Recording, with no server. It is an http.RoundTripper for a
// rest.Config (Config).
type Transport struct {
	exact map[string]*Exchange
	// byPath are the exchanges of each path, for the lists a read is derived from.
	byPath map[string][]*Exchange
}

// NewTransport checks the recording's layout and indexes it.
func NewTransport(rec *Recording) (*Transport, error) {
	if rec == nil {
		return nil, errors.New("no recording")
	}
	if rec.Version != FormatVersion {
		return nil, fmt.Errorf("recording layout version %d: this capctl reads version %d", rec.Version, FormatVersion)
	}
	t := &Transport{exact: map[string]*Exchange{}, byPath: map[string][]*Exchange{}}
	for i := range rec.Exchanges {
		x := &rec.Exchanges[i]
		if !strings.HasPrefix(x.Path, "/") || x.Status < 100 || x.Status > 599 {
			return nil, fmt.Errorf("recording exchange %d: malformed (path %q, status %d)", i, x.Path, x.Status)
		}
		if isSecretPath(x.Path) {
			return nil, fmt.Errorf("recording exchange %d: holds a Secret read (%s): a bundle never does; the file was not made by capctl", i, x.Path)
		}
		t.exact[key(x.Path, x.Query, x.Accept)] = x
		t.byPath[x.Path] = append(t.byPath[x.Path], x)
	}
	return t, nil
}

// RoundTrip answers a GET from the recording: the exact read when recorded, else derived from a
// complete recorded list of the resource, else a NotRecordedError.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return nil, fmt.Errorf("a support bundle is read only: %s %s refused", req.Method, req.URL.Path)
	}
	if isSecretPath(req.URL.Path) {
		return nil, fmt.Errorf("GET %s: %w", req.URL.Path, ErrSecret)
	}
	q := canonicalQuery(req.URL.Query())
	if x, ok := t.exact[key(req.URL.Path, q, req.Header.Get("Accept"))]; ok {
		return respond(req, x.Status, x.ContentType, x.body()), nil
	}
	if status, body, ok := t.derive(req); ok {
		return respond(req, status, "application/json", body), nil
	}
	read := req.URL.Path
	if q != "" {
		read += "?" + q
	}
	return nil, &NotRecordedError{Read: read}
}

func respond(req *http.Request, status int, contentType string, body []byte) *http.Response {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
}

// resourcePath is an API path split into its parts.
type resourcePath struct {
	prefix             string // /api/v1 or /apis/GROUP/VERSION
	group              string
	namespace          string
	resource, name     string
	subresource        string
	namespacedResource bool
}

func parsePath(p string) (resourcePath, bool) {
	var r resourcePath
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		r.prefix, parts = "/api/"+parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.prefix, r.group, parts = "/apis/"+parts[1]+"/"+parts[2], parts[1], parts[3:]
	default:
		return r, false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		r.namespace, r.namespacedResource, parts = parts[1], true, parts[2:]
	}
	r.resource = parts[0]
	if len(parts) > 1 {
		r.name = parts[1]
	}
	if len(parts) > 2 {
		r.subresource = strings.Join(parts[2:], "/")
	}
	return r, r.resource != ""
}

func (r resourcePath) listPath(namespace string) string {
	if namespace != "" {
		return r.prefix + "/namespaces/" + namespace + "/" + r.resource
	}
	return r.prefix + "/" + r.resource
}

// list is a recorded list's answer.
type list struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   map[string]any    `json:"metadata"`
	Items      []json.RawMessage `json:"items"`
}

// derive answers a read the recording holds no exact answer to from a complete list of the same
// resource: of the namespace, or of every namespace filtered to it.
func (t *Transport) derive(req *http.Request) (int, []byte, bool) {
	r, ok := parsePath(req.URL.Path)
	if !ok || r.subresource != "" {
		return 0, nil, false
	}
	q := req.URL.Query()
	for k, v := range q {
		switch k {
		case "labelSelector", "limit", "timeout":
		case "resourceVersion", "resourceVersionMatch", "fieldSelector", "continue":
			if len(v) > 0 && v[0] != "" {
				return 0, nil, false
			}
		default:
			return 0, nil, false
		}
	}
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return 0, nil, false
	}
	accept := req.Header.Get("Accept")
	metaOnly := strings.Contains(accept, "as=PartialObjectMetadata")
	if !metaOnly && accept != "" && !strings.HasPrefix(accept, "application/json") {
		return 0, nil, false
	}
	// The namespace of a namespaced list or object, or "" for a list across namespaces.
	ns := r.namespace
	candidates := []string{r.listPath(ns)}
	if ns != "" {
		candidates = append(candidates, r.listPath(""))
	}
	for _, lp := range candidates {
		l, ok := t.complete(lp, metaOnly)
		if !ok {
			continue
		}
		items := filter(l.Items, ns, r.name, sel, l)
		if r.name != "" {
			if len(items) == 0 {
				return http.StatusNotFound, notFound(r), true
			}
			return http.StatusOK, item(items[0], metaOnly), true
		}
		out := map[string]any{"apiVersion": l.APIVersion, "kind": l.Kind, "metadata": map[string]any{"resourceVersion": l.Metadata["resourceVersion"]}}
		if metaOnly {
			out["apiVersion"], out["kind"] = "meta.k8s.io/v1", "PartialObjectMetadataList"
		}
		raw := make([]json.RawMessage, 0, len(items))
		for _, it := range items {
			raw = append(raw, item(it, metaOnly))
		}
		out["items"] = raw
		b, err := json.Marshal(out)
		if err != nil {
			return 0, nil, false
		}
		return http.StatusOK, b, true
	}
	return 0, nil, false
}

// complete is the recorded list at path read whole (every page), unselected: a full one, or
// for a metadata-only read a metadata one too.
func (t *Transport) complete(path string, metaOnly bool) (*list, bool) {
	for _, first := range t.byPath[path] {
		q, err := url.ParseQuery(first.Query)
		if err != nil || first.Status != http.StatusOK || first.Body == nil || q.Get("labelSelector") != "" || q.Get("fieldSelector") != "" || q.Get("continue") != "" {
			continue
		}
		if !metaOnly && strings.Contains(first.Accept, "as=PartialObjectMetadata") {
			continue
		}
		var whole list
		if json.Unmarshal(first.Body, &whole) != nil || !strings.HasSuffix(whole.Kind, "List") {
			continue
		}
		page, ok := &whole, true
		for ok {
			cont, _ := page.Metadata["continue"].(string)
			if cont == "" {
				whole.Items = append([]json.RawMessage(nil), whole.Items...)
				return &whole, true
			}
			q.Set("continue", cont)
			next, found := t.exact[key(path, canonicalQuery(q), first.Accept)]
			if !found || next.Status != http.StatusOK || next.Body == nil {
				break
			}
			var p list
			if json.Unmarshal(next.Body, &p) != nil {
				break
			}
			whole.Items = append(whole.Items, p.Items...)
			page = &p
		}
	}
	return nil, false
}

// filter keeps the items of namespace ns (all when empty), named name (all when empty) and
// matching sel, each with its apiVersion and kind (list items of built-in kinds omit them).
func filter(items []json.RawMessage, ns, name string, sel labels.Selector, l *list) []map[string]any {
	var out []map[string]any
	for _, raw := range items {
		var it map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber() // integers beyond float64's precision stay exact
		if dec.Decode(&it) != nil {
			continue
		}
		md, _ := it["metadata"].(map[string]any)
		if ns != "" && md["namespace"] != ns || name != "" && md["name"] != name {
			continue
		}
		set := labels.Set{}
		if ls, ok := md["labels"].(map[string]any); ok {
			for k, v := range ls {
				s, _ := v.(string)
				set[k] = s
			}
		}
		if !sel.Matches(set) {
			continue
		}
		if _, ok := it["kind"]; !ok {
			it["apiVersion"], it["kind"] = l.APIVersion, strings.TrimSuffix(l.Kind, "List")
		}
		out = append(out, it)
	}
	return out
}

// item is one object's JSON, or its PartialObjectMetadata.
func item(it map[string]any, metaOnly bool) json.RawMessage {
	if metaOnly {
		it = map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": it["metadata"]}
	}
	b, _ := json.Marshal(it)
	return b
}

func notFound(r resourcePath) []byte {
	b, _ := json.Marshal(map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure",
		"message": fmt.Sprintf("%s %q not found", r.resource, r.name), "reason": "NotFound",
		"details": map[string]any{"name": r.name, "group": r.group, "kind": r.resource}, "code": http.StatusNotFound,
	})
	return b
}

// Client is a read-only management-cluster client over a recording: the same client capctl
// builds for a live cluster, its requests answered by the recording (nothing is dialled).
// contextName and namespace are the bundle's management cluster and default namespace.
func Client(rec *Recording, contextName, namespace string) (*cluster.Client, error) {
	t, err := NewTransport(rec)
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{Host: "https://support-bundle.invalid", WrapTransport: func(http.RoundTripper) http.RoundTripper { return t }}
	return cluster.NewForConfig(cfg, cluster.Options{ReadOnly: true}, "", contextName, namespace)
}
