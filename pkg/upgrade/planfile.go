package upgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/capctl/capctl/internal/digest"
	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/userinput"
	capi "github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// The header of a saved providers' upgrade plan (`upgrade plan --save` without
// --kubernetes-version).
const (
	PlanFileAPIVersion = "capctl.io/v1alpha1"
	PlanFileKind       = "ProviderUpgradePlan"
	planFileMax        = 1 << 20 // a plan names a handful of providers
)

// PlanFile is a reviewed providers' upgrade: every provider's version now and the version to
// upgrade to, and for a provider read from an OCI registry the artifact of that version by
// digest. `upgrade apply --plan` applies exactly it, and refuses when a provider's installed
// version changed or the tag now names another artifact.
type PlanFile struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Contract   string           `json:"contract"`
	Providers  []PlannedUpgrade `json:"providers"`
	// Digest is the digest of the file's content with an empty digest: an edited file is refused.
	Digest string `json:"digest"`
}

// PlannedUpgrade is one provider of a plan file.
type PlannedUpgrade struct {
	Namespace    string        `json:"namespace"`
	ProviderName string        `json:"providerName"`
	Type         provider.Type `json:"type"`
	From         string        `json:"from"`
	To           string        `json:"to"`
	// Artifact is the OCI artifact of To by digest (HOST/PATH/NAME@sha256:...), "" when the
	// provider's repository is not an OCI registry.
	Artifact string `json:"artifact,omitempty"`
}

// label is the provider's manifest label.
func (p PlannedUpgrade) label() string { return provider.ManifestLabel(p.ProviderName, p.Type) }

// newPlanFile is the plan of the current contract, each new version's artifact read (pinned) now.
func newPlanFile(ctx context.Context, src Source, plan *ProviderPlan) (*PlanFile, error) {
	pf := &PlanFile{APIVersion: PlanFileAPIVersion, Kind: PlanFileKind, Contract: capi.Current}
	for _, cp := range plan.Contracts {
		if cp.Contract != capi.Current {
			continue
		}
		for _, u := range cp.Providers {
			if u.NextVersion == "" {
				continue
			}
			pu := PlannedUpgrade{Namespace: u.Namespace, ProviderName: u.ProviderName, Type: u.Type, From: u.CurrentVersion, To: u.NextVersion}
			a, err := src.Artifact(ctx, inventory.New(u.ProviderName, u.Type, u.CurrentVersion, u.Namespace), u.NextVersion)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", u.Name, u.NextVersion, err)
			}
			pu.Artifact = a
			pf.Providers = append(pf.Providers, pu)
		}
	}
	if len(pf.Providers) == 0 {
		return nil, fmt.Errorf("every provider is up to date for contract %s: there is no upgrade to save", capi.Current)
	}
	d, err := pf.digest()
	if err != nil {
		return nil, err
	}
	pf.Digest = d
	return pf, nil
}

func (pf PlanFile) digest() (string, error) {
	pf.Digest = ""
	return digest.JSON(pf)
}

// SavePlanFile writes the providers' upgrade plan of the current contract to path (0600), with the
// artifact of every new version read from an OCI registry.
func SavePlanFile(ctx context.Context, src Source, plan *ProviderPlan, path string) (*PlanFile, error) {
	pf, err := newPlanFile(ctx, src, plan)
	if err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := output.WritePrivateFile(path, append(data, '\n')); err != nil {
		return nil, fmt.Errorf("saving the plan: %w", err)
	}
	return pf, nil
}

// IsPlanFile reports whether path holds a providers' upgrade plan (rather than a fleet plan): the
// kind decides which apply reads it. Unreadable files are left for that apply to report.
func IsPlanFile(ctx context.Context, path string) bool {
	data, err := userinput.ReadFileLimit(ctx, path, planFileMax, "")
	if err != nil {
		return false
	}
	var head struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(data, &head) == nil && head.Kind == PlanFileKind
}

// LoadPlanFile reads a saved providers' plan strictly (an unknown field or another kind is
// refused) and refuses an edited one.
func LoadPlanFile(ctx context.Context, path string) (*PlanFile, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("plan file %s is not a regular file (%s)", path, userinput.FileKind(st.Mode()))
	}
	data, err := userinput.ReadFileLimit(ctx, path, planFileMax, "")
	if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	pf := &PlanFile{}
	var sk *userinput.StrictKeysError
	if err := userinput.DecodeJSONStrict(data, pf); errors.As(err, &sk) {
		return nil, fmt.Errorf("plan file %s is not as capctl saved it: %w; save the plan again with `capctl upgrade plan --save %s`", path, err, path)
	} else if err != nil {
		return nil, fmt.Errorf("plan file %s is not a capctl plan (%s %s): %v", path, PlanFileAPIVersion, PlanFileKind, err)
	}
	if pf.APIVersion != PlanFileAPIVersion || pf.Kind != PlanFileKind {
		return nil, fmt.Errorf("plan file %s is apiVersion %q kind %q: this capctl reads apiVersion %s kind %s", path, pf.APIVersion, pf.Kind, PlanFileAPIVersion, PlanFileKind)
	}
	want, err := pf.digest()
	if err != nil {
		return nil, err
	}
	if want != pf.Digest {
		return nil, fmt.Errorf("plan file %s was edited after it was saved: it says digest %s, its content is %s; save the plan again with `capctl upgrade plan --save %s`", path, pf.Digest, want, path)
	}
	if len(pf.Providers) == 0 {
		return nil, fmt.Errorf("plan file %s names no provider", path)
	}
	return pf, nil
}

// Request is the upgrade the plan names: every provider to its planned version.
func (pf *PlanFile) Request() Request {
	var r Request
	for _, p := range pf.Providers {
		r.Providers = append(r.Providers, Requested{Type: p.Type, Ref: provider.Reference{Namespace: p.Namespace, Name: p.ProviderName, Version: p.To}})
	}
	return r
}

// PlanDriftError is `apply --plan` refused before any write: a provider's installed version is
// not the one planned from, or its version's tag names another artifact than the one reviewed.
type PlanDriftError struct {
	Path   string
	Drifts []string
}

func (e *PlanDriftError) Error() string {
	return fmt.Sprintf("the plan %s no longer matches; nothing was changed:\n  - %s\nreview the change and save a new plan with `capctl upgrade plan --save %s`",
		e.Path, strings.Join(e.Drifts, "\n  - "), e.Path)
}

// checkPlan compares the targets and their artifacts (read in prepare, before any write) with
// the plan: every difference is listed.
func checkPlan(pf *PlanFile, path string, prepared []*preparedUpgrade) error {
	var drifts []string
	byLabel := map[string]*preparedUpgrade{}
	for _, pu := range prepared {
		byLabel[pu.target.Provider.ManifestLabel()] = pu
	}
	for _, p := range pf.Providers {
		pu, ok := byLabel[p.label()]
		switch {
		case !ok:
			drifts = append(drifts, fmt.Sprintf("%s: planned from %s to %s, but there is nothing to upgrade now", p.label(), p.From, p.To))
		case pu.target.From != p.From:
			drifts = append(drifts, fmt.Sprintf("%s: planned from %s, installed now %s", p.label(), p.From, pu.target.From))
		case pu.artifact != p.Artifact:
			drifts = append(drifts, fmt.Sprintf("%s %s: the plan was reviewed with artifact %s, the tag now names %s", p.label(), p.To, orNone(p.Artifact), orNone(pu.artifact)))
		}
	}
	if len(drifts) > 0 {
		return &PlanDriftError{Path: path, Drifts: drifts}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
