// Package version holds the build information stamped into the capctl binary by the Makefile and
// goreleaser (through -ldflags -X), and presents it the way `clusterctl version` does.
package version

import (
	"fmt"
	"runtime"
	"strings"
)

// These are set at build time with -ldflags "-X github.com/capctl/capctl/internal/version.gitVersion=...".
var (
	gitVersion   = "v0.0.0-dev"
	gitCommit    = "unknown"
	gitTreeState = "unknown"
	buildDate    = "1970-01-01T00:00:00Z"
)

// Info is the build information of the running binary. Field names match clusterctl's output so
// scripts that parse `clusterctl version -o json` also parse capctl's.
type Info struct {
	Major        string `json:"major"`
	Minor        string `json:"minor"`
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
}

// Get returns the build information of this binary.
func Get() Info {
	major, minor := majorMinor(gitVersion)
	return Info{
		Major:        major,
		Minor:        minor,
		GitVersion:   gitVersion,
		GitCommit:    gitCommit,
		GitTreeState: gitTreeState,
		BuildDate:    buildDate,
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     fmt.Sprintf("%s/%s", runtime.GOOS, runtime.GOARCH),
	}
}

// UserAgent is sent with every API request so server logs show which tool wrote what.
func UserAgent() string {
	return fmt.Sprintf("capctl/%s (%s/%s)", gitVersion, runtime.GOOS, runtime.GOARCH)
}

func majorMinor(v string) (string, string) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return "", ""
	}
	return parts[0], parts[1]
}
