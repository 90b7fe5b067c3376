package repository

import (
	"fmt"
	"strings"

	"github.com/capctl/capctl/pkg/versions"
)

// MetadataFile is the name of the metadata file of every provider release.
const MetadataFile = "metadata.yaml"

// metadataAPIVersion is the only apiVersion clusterctl v1.14 accepts for metadata.yaml.
const metadataAPIVersion = "clusterctl.cluster.x-k8s.io/v1alpha3"

// Metadata is a provider release's metadata.yaml.
type Metadata struct {
	APIVersion    string          `json:"apiVersion"`
	Kind          string          `json:"kind"`
	ReleaseSeries []ReleaseSeries `json:"releaseSeries"`
}

// ReleaseSeries maps a major.minor series to the contract it implements.
type ReleaseSeries struct {
	Major    int32  `json:"major"`
	Minor    int32  `json:"minor"`
	Contract string `json:"contract"`
}

func (s ReleaseSeries) String() string {
	return fmt.Sprintf("v%d.%d (%s)", s.Major, s.Minor, s.Contract)
}

// SeriesFor returns the release series of version (exact major.minor match).
func (m *Metadata) SeriesFor(version string) (ReleaseSeries, error) {
	v, err := versions.Parse(version)
	if err != nil {
		return ReleaseSeries{}, fmt.Errorf("version %q is not a semantic version: %w", version, err)
	}
	for _, s := range m.ReleaseSeries {
		if uint64(s.Major) == v.Major() && uint64(s.Minor) == v.Minor() {
			return s, nil
		}
	}
	have := make([]string, 0, len(m.ReleaseSeries))
	for _, s := range m.ReleaseSeries {
		have = append(have, fmt.Sprintf("v%d.%d", s.Major, s.Minor))
	}
	return ReleaseSeries{}, fmt.Errorf("version %s is not in any release series of its metadata.yaml (series: %s)", version, strings.Join(have, ", "))
}

// LatestSeriesForContract returns the newest series implementing contract.
func (m *Metadata) LatestSeriesForContract(contract string) (ReleaseSeries, bool) {
	var best ReleaseSeries
	found := false
	for _, s := range m.ReleaseSeries {
		if s.Contract != contract {
			continue
		}
		if !found || s.Major > best.Major || (s.Major == best.Major && s.Minor > best.Minor) {
			best, found = s, true
		}
	}
	return best, found
}
