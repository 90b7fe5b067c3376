package mcpserver

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestRequestValidate(t *testing.T) {
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{}, "no transport"},
		{Request{HTTP: "0.0.0.0:8080"}, "loopback address only"},
		{Request{HTTP: "10.0.0.1:8080"}, "loopback address only"},
		{Request{HTTP: "8080"}, "want HOST:PORT"},
		{Request{HTTP: "127.0.0.1:0"}, ""},
		{Request{HTTP: "[::1]:8765"}, ""},
		{Request{HTTP: "localhost:8765"}, ""},
		{Request{Stdio: &mcp.StdioTransport{}}, ""},
	} {
		err := c.req.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.req, err, c.want)
		}
	}
}
