package upgrade

import (
	"strings"
	"testing"
	"time"

	capi "github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/provider"
)

func TestRequestValidate(t *testing.T) {
	ref := func(t provider.Type, s string) Requested {
		r, err := provider.ParseReference(s, true)
		if err != nil {
			panic(err)
		}
		return Requested{Type: t, Ref: r}
	}
	for _, tc := range []struct {
		r    Request
		want string // "" when valid
	}{
		{Request{Contract: capi.Current}, ""},
		{Request{Providers: []Requested{ref(provider.CoreProviderType, "capi-system/cluster-api:v1.14.0")}}, ""},
		{Request{}, "either --contract or at least one of --core"},
		{Request{Contract: capi.Current, Providers: []Requested{ref(provider.InfrastructureProviderType, "docker:v1.14.0")}}, "--contract cannot be combined with --core"},
		{Request{Contract: "v1beta9"}, "can only upgrade to the " + capi.Current + " contract, v1beta9 was requested"},
		{Request{Providers: []Requested{ref(provider.InfrastructureProviderType, "docker")}}, "--infrastructure docker: give the version to upgrade to"},
		{Request{Providers: []Requested{ref(provider.InfrastructureProviderType, "docker:latest")}}, "give the version to upgrade to"},
		{Request{Providers: []Requested{ref(provider.CoreProviderType, "kubeadm:v1.14.0")}}, "--core kubeadm:v1.14.0: the core provider is cluster-api"},
	} {
		err := tc.r.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.r, err, tc.want)
		}
	}
}

func TestApplyOptionsValidate(t *testing.T) {
	if err := (ApplyOptions{WaitTimeout: DefaultWaitProviderTimeout}).Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if err := (ApplyOptions{WaitTimeout: d}).Validate(); err == nil || !strings.Contains(err.Error(), "--wait-provider-timeout must be a positive") {
			t.Errorf("%s: %v", d, err)
		}
	}
}
