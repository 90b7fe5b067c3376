// Package versions is the one parser of semantic versions, for provider and Kubernetes versions
// alike, so every command accepts the same spellings: MAJOR.MINOR.PATCH with an optional
// -pre-release and +build, with or without a leading "v" (clusterctl users type both). The
// canonical spelling, written into manifests and compared, has the "v".
package versions

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Parse reads a semantic version: 1.34.1, v1.34.1, v1.14.0-rc.1, v1.21.1+build. Partial versions
// (v1.34) and other spellings are refused, as clusterctl refuses them.
func Parse(s string) (*semver.Version, error) {
	v, err := semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
	if err != nil {
		return nil, fmt.Errorf("%q is not a semantic version like v1.34.1: %v", s, err)
	}
	return v, nil
}

// MustParse is Parse for constants; it panics on a bad version.
func MustParse(s string) *semver.Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

// Canonical is v's spelling with the leading "v": v1.34.1.
func Canonical(v *semver.Version) string { return "v" + v.String() }

// Kubernetes reads a Kubernetes version given by the user (a flag, the environment, the config
// file) and returns it canonical: "1.34.1" and "v1.34.1" both give v1.34.1.
func Kubernetes(s string) (string, *semver.Version, error) {
	v, err := semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
	if err != nil {
		return "", nil, fmt.Errorf("kubernetes version %q is not a version like v1.34.1 (or 1.34.1): %v", s, err)
	}
	return Canonical(v), v, nil
}
