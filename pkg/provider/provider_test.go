package provider

import (
	"strings"
	"testing"
)

func TestParseReference(t *testing.T) {
	good := map[string]Reference{
		"aws":                  {Name: "aws"},
		"AWS:v2.8.1":           {Name: "aws", Version: "v2.8.1"},
		"docker:latest":        {Name: "docker", Version: "latest"},
		"kubeadm:v1.14.0-rc.1": {Name: "kubeadm", Version: "v1.14.0-rc.1"},
	}
	for in, want := range good {
		got, err := ParseReference(in, false)
		if err != nil || got != want {
			t.Errorf("ParseReference(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	got, err := ParseReference("capi-system/cluster-api:v1.14.0", true)
	if err != nil || got.Namespace != "capi-system" || got.Name != "cluster-api" || got.Version != "v1.14.0" {
		t.Errorf("namespaced reference: %+v %v", got, err)
	}
	for _, in := range []string{"aws:", ":v1", "aws:1.2.x", "a:b:c", "", "ns/aws", "Bad_Name"} {
		if _, err := ParseReference(in, false); err == nil {
			t.Errorf("ParseReference(%q) accepted", in)
		} else if !strings.Contains(err.Error(), "name[:version]") {
			t.Errorf("error for %q does not say the form: %v", in, err)
		}
	}
}

func TestManifestLabelRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  Type
		want string
	}{
		{"cluster-api", CoreProviderType, "cluster-api"},
		{"kubeadm", ControlPlaneProviderType, "control-plane-kubeadm"},
		{"docker", InfrastructureProviderType, "infrastructure-docker"},
		{"in-cluster", IPAMProviderType, "ipam-in-cluster"},
		{"nutanix", RuntimeExtensionProviderType, "runtime-extension-nutanix"},
	} {
		label := ManifestLabel(tc.name, tc.typ)
		if label != tc.want {
			t.Errorf("ManifestLabel(%s,%s) = %s", tc.name, tc.typ, label)
		}
		typ, name, ok := ParseManifestLabel(label)
		if !ok || typ != tc.typ || name != tc.name {
			t.Errorf("ParseManifestLabel(%s) = %s %s %v", label, typ, name, ok)
		}
	}
	if _, _, ok := ParseManifestLabel("bootstrap-"); ok {
		t.Error("empty name accepted")
	}
}

func TestParseLabelReference(t *testing.T) {
	got, err := ParseLabelReference("infrastructure-docker:v1.14.0", false)
	if err != nil || got != (LabelReference{Label: "infrastructure-docker", Name: "docker", Version: "v1.14.0", Type: InfrastructureProviderType}) {
		t.Errorf("%+v %v", got, err)
	}
	if got, err = ParseLabelReference("cluster-api", false); err != nil || got.Type != CoreProviderType || got.Version != "" {
		t.Errorf("no version: %+v %v", got, err)
	}
	if _, err = ParseLabelReference("cluster-api:latest", true); err != nil {
		t.Errorf("latest allowed: %v", err)
	}
	for in, want := range map[string]string{
		"docker":             "is not a provider label",
		"cluster-api:latest": "must look like v1.2.3",
		"cluster-api:":       "must look like v1.2.3",
		"cluster-api:1.x":    "must look like v1.2.3",
	} {
		if _, err := ParseLabelReference(in, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
