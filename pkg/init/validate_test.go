package clusterinit

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsCheck(t *testing.T) {
	ok := InitRequest{Selection: Selection{Infrastructure: []string{"docker:v1.14.0"}}, TargetNamespace: "capi", WaitProviderTimeout: time.Minute}
	if err := ok.Validate(); err != nil {
		t.Errorf("valid: %v", err)
	}
	for _, tc := range []struct {
		o    InitRequest
		want string
	}{
		{InitRequest{WaitProviderTimeout: 0}, "--wait-provider-timeout must be a positive number of seconds, not 0"},
		{InitRequest{Selection: Selection{Core: "-"}, WaitProviderTimeout: time.Minute}, "core provider"},
		{InitRequest{TargetNamespace: "Not_A_Label", WaitProviderTimeout: time.Minute}, `--target-namespace "Not_A_Label"`},
	} {
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	if err := (ImagesRequest{TargetNamespace: "Bad"}).Validate(); err == nil || !strings.Contains(err.Error(), "--target-namespace") {
		t.Errorf("list-images namespace: %v", err)
	}
}
