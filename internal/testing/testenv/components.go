package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// ComponentCRDs writes the CRDs of the fixtures' provider components at one release (folders
// under repository/, e.g. "cluster-api", "bootstrap-kubeadm") into a folder of the test, for
// Options.CRDPaths, and returns it.
//
// Each CRD is installed the way a test API server can serve it: Cluster API's CRDs convert
// between their versions through the providers' webhooks, which a bare API server does not run.
// So each CRD keeps every version in its schema but serves only its storage version, with
// conversion None: the server then never has to convert, and an object can only be read or
// written at the version it is stored at, as it would be with the webhooks in place.
func ComponentCRDs(tb testing.TB, version string, providers ...string) string {
	tb.Helper()
	repo := filepath.Join(FixturesDir(tb), "repository")
	out := tb.TempDir()
	n := 0
	for _, p := range providers {
		files, err := filepath.Glob(filepath.Join(repo, p, version, "*-components.yaml"))
		if err != nil || len(files) != 1 {
			tb.Fatalf("the fixtures hold no single components file for %s %s in %s (%v)", p, version, repo, err)
		}
		data, err := os.ReadFile(files[0])
		if err != nil {
			tb.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := dec.Decode(crd); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				tb.Fatalf("decoding %s: %v", files[0], err)
			}
			if crd.Kind != "CustomResourceDefinition" {
				continue
			}
			for i := range crd.Spec.Versions {
				crd.Spec.Versions[i].Served = crd.Spec.Versions[i].Storage
			}
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
			delete(crd.Annotations, "cert-manager.io/inject-ca-from")
			b, err := sigsyaml.Marshal(crd)
			if err != nil {
				tb.Fatal(err)
			}
			n++
			if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("%03d-%s.yaml", n, crd.Name)), b, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if n == 0 {
		tb.Fatalf("no CRDs in the %s components of %v", version, providers)
	}
	return out
}
