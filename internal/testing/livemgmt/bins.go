package livemgmt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// The provider labels (as in the components' cluster.x-k8s.io/provider label) the harness runs
// managers for; they are also the binaries' names in a manager set folder (hack/live-bins.sh).
const (
	LabelCore         = "cluster-api"
	LabelBootstrap    = "bootstrap-kubeadm"
	LabelControlPlane = "control-plane-kubeadm"
	LabelDocker       = "infrastructure-docker"
)

// imageLabels maps a manager image's name (the last path element, without the tag) to the
// provider label, so a pod's container says which binary runs it.
var imageLabels = map[string]string{
	"cluster-api-controller":           LabelCore,
	"kubeadm-bootstrap-controller":     LabelBootstrap,
	"kubeadm-control-plane-controller": LabelControlPlane,
	"capd-manager":                     LabelDocker,
}

// ManagersDir is the folder of built manager sets: $CAPCTL_CAPI_BINS, else ~/.cache/capctl/capi.
func ManagersDir() string {
	if d := os.Getenv("CAPCTL_CAPI_BINS"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "capctl", "capi")
}

// K8sBinaries are what every live management cluster runs, from the envtest folder.
var K8sBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

// Missing lists the binaries a live management cluster at the given manager versions needs and
// does not find ("" versions: only the Kubernetes ones), each with its path.
func Missing(versions ...string) []string {
	var out []string
	for _, b := range K8sBinaries {
		p := filepath.Join(testenv.AssetsDir(), b)
		if _, err := os.Stat(p); err != nil {
			out = append(out, p)
		}
	}
	for _, v := range versions {
		for _, l := range []string{LabelCore, LabelBootstrap, LabelControlPlane, LabelDocker} {
			p := filepath.Join(ManagersDir(), v, l)
			if _, err := os.Stat(p); err != nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// managerBinary finds the binary for a provider label at an image tag: the set of the same
// version, else the newest built set of the same minor (the proxy does not serve every patch;
// patches of one minor share CRDs and webhooks). It returns the path and the set's version.
func managerBinary(label, tag string) (string, string, error) {
	dir := ManagersDir()
	if p := filepath.Join(dir, tag, label); isFile(p) {
		return p, tag, nil
	}
	want, err := semver.NewVersion(tag)
	if err != nil {
		return "", "", fmt.Errorf("image tag %q of the %s manager is not a version", tag, label)
	}
	entries, _ := os.ReadDir(dir)
	var best *semver.Version
	for _, e := range entries {
		v, err := semver.NewVersion(e.Name())
		if err != nil || !e.IsDir() || v.Major() != want.Major() || v.Minor() != want.Minor() || !isFile(filepath.Join(dir, e.Name(), label)) {
			continue
		}
		if best == nil || v.GreaterThan(best) {
			best = v
		}
	}
	if best == nil {
		return "", "", fmt.Errorf("no %s manager built for %s (nor another v%d.%d patch) in %s: run `make live-bins` (CAPI_SETS names the versions)", label, tag, want.Major(), want.Minor(), dir)
	}
	return filepath.Join(dir, best.Original(), label), best.Original(), nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// parseImage splits "registry/x/capd-manager:v1.14.0" into ("capd-manager", "v1.14.0").
func parseImage(image string) (name, tag string) {
	if i := strings.LastIndex(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		tag = image[i+1:]
		image = image[:i]
	}
	return image[strings.LastIndex(image, "/")+1:], tag
}
