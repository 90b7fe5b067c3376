package topology

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/digest"
	"github.com/capctl/capctl/internal/output"
)

// The plan file of `topology plan --save`: what was planned from which inputs, for review and
// for the ClusterClass rollout that applies it.
const (
	PlanFileAPIVersion = "capctl.io/v1alpha1"
	PlanFileKind       = "TopologyPlan"
)

// PlanFile is the saved plan. Digest is the sha256 of the file with Digest empty, so an edit
// after review is seen.
type PlanFile struct {
	APIVersion string        `json:"apiVersion"`
	Kind       string        `json:"kind"`
	Digest     string        `json:"digest"`
	Inputs     []Input       `json:"inputs"`
	Clusters   []ClusterPlan `json:"clusters"`
	// Objects are the -f objects as read (what `topology apply` creates, under new names).
	Objects []unstructured.Unstructured `json:"objects"`
	// Live is who the planned clusters and the classes the change reached were when planned:
	// what `topology apply` compares with the management clusters before it writes.
	Live []LiveObject `json:"live"`
}

// LiveObject is one Cluster or ClusterClass as the plan read it: a later uid or generation (a
// spec change) is drift.
type LiveObject struct {
	ManagementCluster string `json:"managementCluster,omitempty"`
	Kind              string `json:"kind"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	UID               string `json:"uid"`
	Generation        int64  `json:"generation"`
}

// digest is the file's digest: the sha256 of its JSON with Digest empty (what savePlan writes and
// LoadPlan checks).
func (pf PlanFile) digest() (string, error) {
	pf.Digest = ""
	return digest.JSON(pf)
}

func savePlan(path string, res *PlanResult, objs []*unstructured.Unstructured) error {
	pf := PlanFile{APIVersion: PlanFileAPIVersion, Kind: PlanFileKind, Inputs: res.Inputs, Clusters: res.Clusters, Live: res.live, Objects: []unstructured.Unstructured{}}
	for _, u := range objs {
		pf.Objects = append(pf.Objects, *u)
	}
	if pf.Live == nil {
		pf.Live = []LiveObject{}
	}
	digest, err := pf.digest()
	if err != nil {
		return err
	}
	pf.Digest = digest
	data, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return err
	}
	if err := output.WritePrivateFile(path, append(data, '\n')); err != nil {
		return fmt.Errorf("--save: %w", err)
	}
	return nil
}
