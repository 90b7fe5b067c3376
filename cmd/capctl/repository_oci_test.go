package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/registrytest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/repository"
)

// TestRepositoryMirrorToOCI publishes to a real registry (TLS, htpasswd, the credential in a
// Docker config) from the command line: the credential never appears in the output, even at
// -v 10; a second run pushes nothing; providers configured from the registry list their images
// with no cluster; plain HTTP with a credential is refused.
func TestRepositoryMirrorToOCI(t *testing.T) {
	testenv.Integration(t)
	reg := registrytest.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig)
	cfg := initTestConfig(t, testenv.FixturesDir(t))
	appendFile(t, cfg, repository.OCICAFileKey+": "+reg.CAFile+"\n")
	secrets := []string{reg.Password, base64.StdEncoding.EncodeToString([]byte(reg.User + ":" + reg.Password))}
	noSecret := func(what, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Fatalf("%s printed the registry credential:\n%s", what, out)
			}
		}
	}

	to := "oci://" + reg.Host + "/capi"
	args := []string{"repository", "mirror", "--to", to, "cluster-api:v1.14.0", "infrastructure-docker:v1.14.0", "--config", cfg}
	out, errOut, code := runCapctl(t, append(args, "-v", "10")...)
	noSecret("repository mirror -v 10", out+errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"# OCI artifacts published by capctl repository mirror under " + to, "(pushed)",
		"url: " + to + "/manifests/infrastructure-docker", "url: " + to + "/manifests/cert-manager", "Mirroring infrastructure-docker v1.14.0"} {
		if !strings.Contains(out+errOut, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, errOut)
		}
	}
	out, errOut, code = runCapctl(t, append(args, "-o", "json")...)
	var res repository.MirrorResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Providers) != 2 || res.CertManager == nil {
		t.Fatalf("second run: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, m := range append(res.Providers, *res.CertManager) {
		if !m.Unchanged || !strings.HasPrefix(m.Digest, "sha256:") {
			t.Errorf("second run pushed %s again: %+v", m.Name, m)
		}
	}

	// The fragment the mirror printed, as a user appends it: providers from the registry alone.
	ociCfg := filepath.Join(t.TempDir(), "clusterctl.yaml")
	body := "overridesFolder: " + filepath.Join(t.TempDir(), "overrides") + "\n" + repository.OCICAFileKey + ": " + reg.CAFile + "\n" + res.Config
	if err := os.WriteFile(ociCfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCapctl(t, "init", "list-images", "--core", "cluster-api:v1.14.0", "-b", "-", "-c", "-", "-i", "docker:v1.14.0", "--config", ociCfg)
	if code != 0 || !strings.Contains(out, "gcr.io/k8s-staging-cluster-api/capd-manager:v1.14.0") || !strings.Contains(out, "cluster-api-controller:v1.14.0") {
		t.Errorf("list-images from the registry: exit %d\n%s\n%s", code, out, errOut)
	}

	// No credential for the registry: refused naming the way to log in.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	_, errOut, code = runCapctl(t, args...)
	if code == 0 || !strings.Contains(errOut, "docker login "+reg.Host) {
		t.Errorf("no credential: exit %d\n%s", code, errOut)
	}
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig)

	// --layout for a folder is refused before anything is fetched.
	_, errOut, code = runCapctl(t, "repository", "mirror", "--to", t.TempDir(), "--layout", "operator", "--config", cfg)
	if code == 0 || !strings.Contains(errOut, "applies to an oci:// target only") {
		t.Errorf("--layout with a folder: exit %d\n%s", code, errOut)
	}
	// Plain HTTP for a registry with a credential: refused, the credential not printed.
	appendFile(t, cfg, repository.OCIPlainHTTPKey+": "+reg.Host+"\n")
	out, errOut, code = runCapctl(t, append(args, "-v", "10")...)
	noSecret("plain HTTP refusal", out+errOut)
	if code == 0 || !strings.Contains(errOut, "credentials are never sent over plain HTTP") {
		t.Errorf("plain HTTP with a credential: exit %d\n%s", code, errOut)
	}
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// TestRepositoryMirrorImagesBetweenRegistries copies the providers' images from one real registry
// to another with --images: digests kept, a second run copies nothing, and init list-images with
// the printed overrides names only the target registry.
func TestRepositoryMirrorImagesBetweenRegistries(t *testing.T) {
	testenv.Integration(t)
	src, dst := registrytest.Start(t), registrytest.Start(t)
	dockerConfig, caFile := registrytest.Trust(t, src, dst)
	t.Setenv("DOCKER_CONFIG", dockerConfig)
	cfg := initTestConfig(t, testenv.FixturesDir(t))
	// The providers' images, as an air-gapped site's first registry serves them.
	appendFile(t, cfg, repository.OCICAFileKey+": "+caFile+"\nimages:\n  all:\n    repository: "+src.Host+"/upstream\n")
	selection := []string{"--core", "cluster-api:v1.14.0", "-b", "-", "-c", "-", "-i", "docker:v1.14.0"}
	out, errOut, code := runCapctl(t, append([]string{"init", "list-images", "--config", cfg}, selection...)...)
	images := strings.Fields(out)
	if code != 0 || len(images) != 2 {
		t.Fatalf("list-images from the source: exit %d\n%s\n%s", code, out, errOut)
	}
	digests := map[string]string{}
	for _, img := range images {
		if !strings.HasPrefix(img, src.Host+"/upstream/") {
			t.Fatalf("image %s is not from the source registry", img)
		}
		digests[img] = src.PushRandomImage(t, img)
	}

	args := []string{"repository", "mirror", "--to", "oci://" + dst.Host + "/capi", "--images", "cluster-api:v1.14.0", "infrastructure-docker:v1.14.0", "--config", cfg, "-o", "json"}
	for run := 1; run <= 2; run++ {
		out, errOut, code = runCapctl(t, args...)
		var res struct {
			repository.MirrorResult
			Images *repository.ImageCopyResult `json:"images"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Images == nil || len(res.Images.Images) != 2 {
			t.Fatalf("mirror --images run %d: exit %d\n%s\n%s", run, code, out, errOut)
		}
		for _, ci := range res.Images.Images {
			if ci.Digest != digests[ci.From] || !strings.HasPrefix(ci.To, dst.Host+"/capi/") || ci.Unchanged != (run == 2) {
				t.Errorf("run %d: %+v, source digest %s", run, ci, digests[ci.From])
			}
		}
		if run == 1 {
			// The fragments as a user appends them: providers and images from the target alone.
			ociCfg := filepath.Join(t.TempDir(), "clusterctl.yaml")
			body := "overridesFolder: " + filepath.Join(t.TempDir(), "overrides") + "\n" + repository.OCICAFileKey + ": " + caFile + "\n" + res.Config + res.Images.Config
			if err := os.WriteFile(ociCfg, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code = runCapctl(t, append([]string{"init", "list-images", "--config", ociCfg}, selection...)...)
			got := strings.Fields(out)
			if code != 0 || len(got) != 2 {
				t.Fatalf("list-images from the target: exit %d\n%s\n%s", code, out, errOut)
			}
			for _, img := range got {
				if !strings.HasPrefix(img, dst.Host+"/capi/") {
					t.Errorf("list-images names %s, not the target registry", img)
				}
			}
		}
	}
	// --images needs a registry target.
	_, errOut, code = runCapctl(t, "repository", "mirror", "--to", t.TempDir(), "--images", "--config", cfg)
	if code == 0 || !strings.Contains(errOut, "--images copies images to a registry") {
		t.Errorf("--images with a folder: exit %d\n%s", code, errOut)
	}
}
