package cluster

import (
	"fmt"
	"net/http"
	"strings"
)

// ErrReadOnly marks a request a read-only client refused without sending it.
var ErrReadOnly = fmt.Errorf("refused by a read-only client")

// readOnlyTransport sends reads only: GET, HEAD and OPTIONS, the self-reviews the API server
// answers without storing anything (SelfSubjectAccessReview, SelfSubjectRulesReview,
// SelfSubjectReview: `auth can-i`), and server-side dry runs (dryRun=All: `topology plan`). Any
// other request fails before it leaves the process, so a read-only front end (`capctl mcp`)
// cannot change a cluster whatever a verb beneath it tries.
type readOnlyTransport struct{ next http.RoundTripper }

func (t readOnlyTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

func (t readOnlyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !ReadOnlyAllows(r.Method, r.URL.Path, r.URL.Query().Get("dryRun")) {
		return nil, fmt.Errorf("%w: %s %s", ErrReadOnly, r.Method, r.URL.Path)
	}
	return t.next.RoundTrip(r)
}

// selfReviews are the resources whose create only asks the API server a question.
var selfReviews = []string{"/selfsubjectaccessreviews", "/selfsubjectrulesreviews", "/selfsubjectreviews"}

// ReadOnlyAllows is the read-only rule: whether a request with this method, URL path and dryRun
// query value may be sent.
func ReadOnlyAllows(method, path, dryRun string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	if dryRun == "All" && (method == http.MethodPatch || method == http.MethodPost || method == http.MethodPut) {
		return true
	}
	if method == http.MethodPost && strings.HasPrefix(path, "/apis/authorization.k8s.io/") || method == http.MethodPost && strings.HasPrefix(path, "/apis/authentication.k8s.io/") {
		for _, s := range selfReviews {
			if strings.HasSuffix(path, s) {
				return true
			}
		}
	}
	return false
}
