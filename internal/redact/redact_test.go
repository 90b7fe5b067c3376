package redact

import "testing"

func TestIsSensitive(t *testing.T) {
	for _, k := range []string{"GITHUB_TOKEN", "github-token", "AWS_B64ENCODED_CREDENTIALS", "VSPHERE_PASSWORD", "AZURE_CLIENT_SECRET", "SSH_KEY", "AWS_SECRET_ACCESS_KEY"} {
		if !IsSensitive(k) {
			t.Errorf("%s should be sensitive", k)
		}
	}
	for _, k := range []string{"AWS_REGION", "KUBERNETES_VERSION", "CLUSTER_NAME", "KEYCLOAK_URL"} {
		if IsSensitive(k) {
			t.Errorf("%s should not be sensitive", k)
		}
	}
	if Value("GITHUB_TOKEN", "ghp_x") != Mask || Value("AWS_REGION", "eu-west-1") != "eu-west-1" {
		t.Error("Value must mask secrets only")
	}
}
