// Package kubesupport is the one home of "which workload-cluster Kubernetes versions does an
// installed provider say it supports".
//
// No provider declares this in a machine-readable place: clusterctl's metadata.yaml carries the
// release series and their contract only, and no label or annotation for it is written by any
// provider. What is published is prose: every Cluster API release note opens with
// "Workload Cluster: v1.X.x -> v1.Y.x", and the Cluster API book keeps a support matrix. Those
// facts cover the three providers Cluster API itself releases (core cluster-api, bootstrap kubeadm,
// control-plane kubeadm, which share one version and one support range); they are the table below.
// Any other provider is reported as not declaring a range: not checked, never refused.
package kubesupport

import (
	"fmt"

	"github.com/capctl/capctl/pkg/versions"
)

// Status says what a provider declares about one workload Kubernetes version.
type Status string

const (
	// Supported: the provider's release says it supports that version.
	Supported Status = "Supported"
	// Unsupported: the provider's release names a range that does not hold that version.
	Unsupported Status = "Unsupported"
	// NotDeclared: capctl knows no range for this provider or this release of it.
	NotDeclared Status = "NotDeclared"
)

// Check is the answer for one provider release and one workload Kubernetes version.
type Check struct {
	Status Status `json:"status"`
	// Range is the declared workload range, "v1.31.x -> v1.37.x" (empty when not declared).
	Range string `json:"range,omitempty"`
	// Source is where the range is published.
	Source string `json:"source,omitempty"`
	// Reason explains NotDeclared and Unsupported in a sentence.
	Reason string `json:"reason,omitempty"`
}

// The providers Cluster API releases, by manifest label (the inventory object name).
const (
	CoreProvider         = "cluster-api"
	KubeadmBootstrap     = "bootstrap-kubeadm"
	KubeadmControlPlane  = "control-plane-kubeadm"
	clusterAPIReleaseURL = "https://github.com/kubernetes-sigs/cluster-api/releases"
)

// span is the workload range of the patch releases from..through of one Cluster API minor.
type span struct {
	minor         uint64 // Cluster API v1.<minor>
	from, through uint64 // patch releases the range was published for
	min, max      uint64 // workload Kubernetes v1.<min>.x -> v1.<max>.x
	source        string
}

// clusterAPI is the workload support range of each Cluster API release, as each release's notes
// state it ("Kubernetes version support ... Workload Cluster: ..."), checked release by release
// (CHANGELOG/vX.Y.Z.md of kubernetes-sigs/cluster-api and its GitHub release pages). Where the
// project's own documents disagree the widest claim is kept, and said so below: a refusal must
// rest on what the provider says it does not support.
//
// The last patch of each minor listed is the newest release checked; a later patch may claim
// more, so beyond it the newest minor is not refused (see SupportsWorkloadKubernetes).
var clusterAPI = []span{
	// v1.12.0: "Workload Cluster: v1.29.x -> v1.34.x".
	{12, 0, 0, 29, 34, "Cluster API v1.12.0 release notes"},
	// v1.12.1, v1.12.2, v1.12.9, v1.12.10: "v1.29.x -> v1.35.x".
	{12, 1, 7, 29, 35, "Cluster API v1.12.1 release notes"},
	// The book's support matrix (reference/versions.md) marks Kubernetes v1.36 "✓ >= v1.12.8"
	// although the v1.12.9 and v1.12.10 notes still say v1.35.x: the wider claim is kept.
	{12, 8, 11, 29, 36, "Cluster API book, supported versions matrix (v1.36 from v1.12.8)"},
	// v1.13.0: "v1.30.x -> v1.35.x".
	{13, 0, 0, 30, 35, "Cluster API v1.13.0 release notes"},
	// The book marks v1.36 "✓ >= v1.13.1" (the v1.13.1 notes say v1.35.x; v1.13.2 to v1.13.5
	// say v1.30.x -> v1.36.x).
	{13, 1, 5, 30, 36, "Cluster API v1.13.2 release notes (book: v1.36 from v1.13.1)"},
	// The v1.13.6 GitHub release says "v1.30.x -> v1.37.x" (its CHANGELOG file, and v1.13.7's,
	// still say v1.36.x); a patch release does not drop a minor, so v1.13.7 keeps it.
	{13, 6, 7, 30, 37, "Cluster API v1.13.6 release notes"},
	// v1.14.0 (and its release candidates): "v1.31.x -> v1.36.x".
	{14, 0, 0, 31, 36, "Cluster API v1.14.0 release notes"},
	// v1.14.1, v1.14.2, v1.14.3, v1.14.4: "v1.31.x -> v1.37.x".
	{14, 1, 4, 31, 37, "Cluster API v1.14.1 release notes"},
}

// Declares tells whether capctl knows a declared range for the provider (by manifest label).
func Declares(provider string) bool {
	switch provider {
	case CoreProvider, KubeadmBootstrap, KubeadmControlPlane:
		return true
	}
	return false
}

// SupportsWorkloadKubernetes says whether provider (a manifest label: cluster-api,
// bootstrap-kubeadm, control-plane-kubeadm, infrastructure-docker, ...) at providerVersion declares
// support for workload clusters running kubernetes.
func SupportsWorkloadKubernetes(provider, providerVersion, kubernetes string) Check {
	if !Declares(provider) {
		return Check{Status: NotDeclared, Reason: fmt.Sprintf("%s does not declare which workload Kubernetes versions it supports", provider)}
	}
	pv, err := versions.Parse(providerVersion)
	if err != nil {
		return Check{Status: NotDeclared, Reason: fmt.Sprintf("%s version %q cannot be read: %v", provider, providerVersion, err)}
	}
	_, kv, err := versions.Kubernetes(kubernetes)
	if err != nil {
		return Check{Status: NotDeclared, Reason: err.Error()}
	}
	var s *span
	var newest *span // the newest checked release of pv's minor
	for i := range clusterAPI {
		sp := &clusterAPI[i]
		if pv.Major() != 1 || sp.minor != pv.Minor() {
			continue
		}
		// A pre-release (v1.14.0-rc.1) is read as the release it leads to: its notes carry the
		// same range.
		if pv.Patch() >= sp.from && pv.Patch() <= sp.through {
			s = sp
		}
		if newest == nil || sp.through > newest.through {
			newest = sp
		}
	}
	if s == nil && newest != nil && pv.Patch() > newest.through {
		// A patch newer than the releases checked: it supports at least what the newest checked
		// one does, and may have added the next Kubernetes minor. Older minors are still refused;
		// above the known maximum it is not declared to capctl.
		s = newest
		r := rangeOf(s)
		if kv.Major() == 1 && kv.Minor() > s.max {
			return Check{Status: NotDeclared, Range: r, Source: s.source,
				Reason: fmt.Sprintf("%s %s is newer than the releases capctl knows (v1.%d.%d supports %s): its support for %s is not known", provider, versions.Canonical(pv), s.minor, s.through, r, versions.Canonical(kv))}
		}
	}
	if s == nil {
		return Check{Status: NotDeclared, Reason: fmt.Sprintf("capctl knows no workload Kubernetes range for %s %s (it knows Cluster API v1.12 to v1.14): see %s", provider, versions.Canonical(pv), clusterAPIReleaseURL)}
	}
	r := rangeOf(s)
	if kv.Major() != 1 || kv.Minor() < s.min || kv.Minor() > s.max {
		return Check{Status: Unsupported, Range: r, Source: s.source,
			Reason: fmt.Sprintf("%s %s supports workload clusters %s (%s), not %s", provider, versions.Canonical(pv), r, s.source, versions.Canonical(kv))}
	}
	return Check{Status: Supported, Range: r, Source: s.source}
}

func rangeOf(s *span) string { return fmt.Sprintf("v1.%d.x -> v1.%d.x", s.min, s.max) }
