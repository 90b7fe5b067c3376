package cluster

import (
	"net/http"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/transport"
)

// cancelRecorder is the innermost transport: it records the requests it was asked to cancel.
type cancelRecorder struct{ cancelled []*http.Request }

func (c *cancelRecorder) RoundTrip(*http.Request) (*http.Response, error) { return nil, nil }
func (c *cancelRecorder) CancelRequest(r *http.Request)                   { c.cancelled = append(c.cancelled, r) }

// A request timeout cancels through client-go's wrappers; the counting transport must pass the
// cancel on to the transport beneath instead of stopping it there with a logged warning.
func TestCountingTransportPassesCancelThrough(t *testing.T) {
	inner := &cancelRecorder{}
	rt := transport.NewUserAgentRoundTripper("capctl-test", countingTransport{next: inner, n: &atomic.Int64{}})
	canceler, ok := rt.(interface{ CancelRequest(*http.Request) })
	if !ok {
		t.Fatalf("%T cannot cancel requests", rt)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443/api", nil)
	canceler.CancelRequest(req)
	if len(inner.cancelled) != 1 || inner.cancelled[0] != req {
		t.Fatalf("the cancel did not reach the transport beneath the counter: %v", inner.cancelled)
	}
}
