package topology

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

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
}

func savePlan(path string, res *PlanResult) error {
	pf := PlanFile{APIVersion: PlanFileAPIVersion, Kind: PlanFileKind, Inputs: res.Inputs, Clusters: res.Clusters}
	data, err := json.Marshal(pf)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	pf.Digest = "sha256:" + hex.EncodeToString(sum[:])
	data, err = json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return err
	}
	if err := output.WritePrivateFile(path, append(data, '\n')); err != nil {
		return fmt.Errorf("--save: %w", err)
	}
	return nil
}
