package versions

import "testing"

func TestParseAcceptsBothSpellings(t *testing.T) {
	for _, s := range []string{"1.34.1", "v1.34.1", "v1.14.0-rc.1", "1.21.1+build.2"} {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "v1.34", "1", "latest", "vv1.2.3", "v1.2.3.4", " v1.2.3"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted a non-version", s)
		}
	}
}

func TestKubernetesIsCanonical(t *testing.T) {
	for in, want := range map[string]string{"1.34.1": "v1.34.1", "v1.34.1": "v1.34.1", "1.35.0-beta.0": "v1.35.0-beta.0"} {
		got, v, err := Kubernetes(in)
		if err != nil || got != want || v == nil {
			t.Errorf("Kubernetes(%q) = %q, %v, %v; want %q", in, got, v, err, want)
		}
	}
	if _, _, err := Kubernetes("1.34"); err == nil {
		t.Error("Kubernetes(1.34) accepted a partial version")
	}
}
