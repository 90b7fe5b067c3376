package replay

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func get(t *testing.T, rt http.RoundTripper, url, accept string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://x"+url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// server answers: machines of ns a in two pages, a Secret, anything else 404.
func server(calls *int) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		*calls++
		body := `{"kind":"Status","code":404}`
		status := 404
		switch {
		case r.URL.Path == "/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines" && r.URL.Query().Get("continue") == "":
			status, body = 200, `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"7","continue":"p2"},"items":[
				{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"namespace":"a","name":"m1","labels":{"cluster.x-k8s.io/cluster-name":"c1"}}}]}`
		case r.URL.Path == "/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines":
			status, body = 200, `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"7"},"items":[
				{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Machine","metadata":{"namespace":"a","name":"m2","labels":{"cluster.x-k8s.io/cluster-name":"c2"}}}]}`
		case r.URL.Path == "/api/v1/pods":
			status, body = 200, `{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"9"},"items":[
				{"metadata":{"namespace":"a","name":"p1"}},{"metadata":{"namespace":"b","name":"p2"}}]}`
		case r.URL.Path == "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations":
			status, body = 200, `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfigurationList","metadata":{"resourceVersion":"12345678901234567"},"items":[
				{"metadata":{"name":"w","generation":12345678901234567},"webhooks":[{"name":"a","clientConfig":{"caBundle":"LS0tLS1CRUdJTiBDRVJU"}},{"name":"b","clientConfig":{"caBundle":""}}]}]}`
		case strings.Contains(r.URL.Path, "/secrets"):
			status, body = 200, `{"kind":"Secret","data":{"value":"c2VjcmV0"}}`
		}
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}, nil
	})
}

// TestRecordAndReplay: what a session read is answered again, exactly or derived from complete
// lists (labels, namespaces, one object, metadata only), a read it holds nothing for is an
// error naming it, and Secrets are neither recorded nor answered.
func TestRecordAndReplay(t *testing.T) {
	calls := 0
	rec := NewRecorder()
	live := rec.Wrap(server(&calls))
	for _, u := range []string{
		"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines?limit=500",
		"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines?continue=p2&limit=500",
		"/api/v1/pods?timeout=30s",
		"/api/v1/namespaces/a/secrets/s",
		"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/clusters/gone",
		"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
	} {
		_, body, err := get(t, live, u, "application/json")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(u, "webhook") && !strings.Contains(body, "LS0tLS1CRUdJTiBDRVJU") {
			t.Errorf("the live caller got a redacted answer: %s", body)
		}
	}
	req, _ := http.NewRequest(http.MethodDelete, "https://x/api/v1/namespaces/a/pods/p1", nil)
	if _, err := live.RoundTrip(req); err == nil || calls != 6 {
		t.Errorf("a DELETE through the recorder: %v (server calls %d)", err, calls)
	}
	recording := rec.Recording()
	data, err := json.Marshal(recording)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "c2VjcmV0") || strings.Contains(string(data), "secrets") || strings.Contains(string(data), "LS0tLS1CRUdJTiBDRVJU") || len(recording.Exchanges) != 5 {
		t.Fatalf("the recording: %s", data)
	}
	var back Recording
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	rt, err := NewTransport(&back)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url, accept string
		status      int
		want        []string
		not         []string
	}{
		// exact, the timeout aside
		{"/api/v1/pods?timeout=10s", "application/json", 200, []string{`"p1"`, `"p2"`}, nil},
		{"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/clusters/gone", "application/json", 404, nil, nil},
		// a label selection of the two pages
		{"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines?labelSelector=cluster.x-k8s.io%2Fcluster-name%3Dc2&limit=500", "application/json", 200, []string{`"m2"`, `"MachineList"`}, []string{`"m1"`}},
		// one object of the list, and one the complete list does not hold
		{"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines/m1", "application/json", 200, []string{`"kind":"Machine"`, `"m1"`}, []string{`"m2"`}},
		{"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines/m9", "application/json", 404, []string{`"NotFound"`}, nil},
		// one namespace of a list across namespaces; list items get their kind
		{"/api/v1/namespaces/b/pods", "application/json", 200, []string{`"p2"`}, []string{`"p1"`}},
		{"/api/v1/namespaces/a/pods/p1", "application/json", 200, []string{`"kind":"Pod"`, `"apiVersion":"v1"`}, nil},
		// a caBundle redacted, still non-empty; an empty one left empty; large numbers exact
		{"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/w", "application/json", 200,
			[]string{`"caBundle":"` + RedactedCABundle + `"`, `"caBundle":""`, `"generation":12345678901234567`}, nil},
		// metadata only
		{"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 200, []string{`"PartialObjectMetadataList"`, `"m1"`, `"m2"`}, nil},
	} {
		status, body, err := get(t, rt, c.url, c.accept)
		if err != nil || status != c.status {
			t.Errorf("GET %s: %d %v\n%s", c.url, status, err, body)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: no %s in %s", c.url, w, body)
			}
		}
		for _, n := range c.not {
			if strings.Contains(body, n) {
				t.Errorf("GET %s: %s in %s", c.url, n, body)
			}
		}
	}
	var nr *NotRecordedError
	for _, u := range []string{
		"/apis/cluster.x-k8s.io/v1beta2/namespaces/b/machines",                         // no list of b
		"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines?fieldSelector=x%3Dy",     // field selectors not derived
		"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/clusters",                         // a Get is no list
		"/apis/cluster.x-k8s.io/v1beta2/namespaces/a/machines?labelSelector=%21%21bad", // not a selector
	} {
		if _, _, err := get(t, rt, u, "application/json"); !errors.As(err, &nr) || !strings.Contains(err.Error(), "not read when the bundle was made") {
			t.Errorf("GET %s: %v, want a NotRecordedError", u, err)
		}
	}
	if _, _, err := get(t, rt, "/api/v1/namespaces/a/secrets", "application/json"); !errors.Is(err, ErrSecret) {
		t.Errorf("Secrets from a replay: %v", err)
	}
	if _, err := rt.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "read only") {
		t.Errorf("a DELETE on a replay: %v", err)
	}
	// A recording with a Secret in it was not made by capctl.
	forged := back
	forged.Exchanges = append(forged.Exchanges, Exchange{Path: "/api/v1/namespaces/a/secrets/s", Status: 200})
	if _, err := NewTransport(&forged); err == nil || !strings.Contains(err.Error(), "Secret") {
		t.Errorf("a recording holding a Secret: %v", err)
	}
	if _, err := NewTransport(&Recording{Version: 2}); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("another layout version: %v", err)
	}
}
