package mirror

import (
	"strings"
	"testing"

	"github.com/capctl/capctl/pkg/provider"
)

func TestRequestValidate(t *testing.T) {
	one := []provider.LabelReference{{Name: "cluster-api", Type: provider.CoreProviderType}}
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{To: "", Providers: one}, "--to DIR is required"},
		{Request{To: "/srv/mirror", Providers: one, Images: true}, "--images copies images to a registry"},
		{Request{To: "/srv/mirror", Providers: one, Layout: "operator"}, "applies to an oci:// target only"},
		{Request{To: "oci://registry.example/capi", Providers: one, Layout: "flat"}, `--layout "flat"`},
		{Request{To: "oci://registry.example/capi:v1", Providers: one}, "without a tag"},
		{Request{To: "oci://registry.example/capi"}, "no provider"},
		{Request{To: "oci://registry.example/capi", Providers: one, Images: true, Layout: "operator"}, ""},
		{Request{To: "/srv/mirror", Providers: one}, ""},
	} {
		err := tc.req.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.req, err, tc.want)
		}
	}
}
