package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/multicluster"
)

// FleetView is `diagnose clusters` over several management clusters: one table of every
// management cluster's clusters, problems first, and each management cluster's summary.
type FleetView struct {
	multicluster.Summary
	Healthy  bool       `json:"healthy"`
	Clusters []FleetRow `json:"clusters"`
	// ManagementErrors say, per management cluster, why its management side (providers) was
	// not checked.
	ManagementErrors map[string]string `json:"managementErrors,omitempty"`
	// Unread are, by context, the kinds that could not be read there (RBAC): the view is partial.
	Unread map[string][]authz.Unreadable `json:"unread,omitempty"`
}

// Partial tells whether some kind could not be read on some management cluster: the view misses it.
func (v *FleetView) Partial() bool { return len(v.Unread) > 0 }

// addUnread records what could not be read on one management cluster.
func addUnread(by *map[string][]authz.Unreadable, name string, us []authz.Unreadable) {
	if len(us) == 0 {
		return
	}
	if *by == nil {
		*by = map[string][]authz.Unreadable{}
	}
	(*by)[name] = us
}

// renderUnread says, per management cluster in the summary's order, what could not be read.
func renderUnread(w io.Writer, ms []multicluster.ManagementCluster, by map[string][]authz.Unreadable) error {
	for _, m := range ms {
		if us := by[m.Name]; len(us) > 0 {
			var b strings.Builder
			fmt.Fprintf(&b, "On %s: ", m.Name)
			writePartial(&b, us, nil)
			if _, err := io.WriteString(w, b.String()); err != nil {
				return err
			}
		}
	}
	return nil
}

// clustersEach runs Clusters on every management cluster, concurrently (bounded), with the
// namespace resolved in each one. A management cluster that cannot be read is reported in its
// summary; the others are still diagnosed.
func clustersEach(ctx context.Context, members []multicluster.Member, opts ClustersRequest) *FleetView {
	results := multicluster.Each(ctx, members, nil, func(ctx context.Context, c *cluster.Client) (*FleetReport, error) {
		o := opts
		o.Namespace = c.NamespaceOr(opts.Namespace)
		fr, err := Clusters(ctx, c, o)
		var nf *describe.NamespaceNotFoundError
		if errors.As(err, &nf) {
			return &FleetReport{Healthy: true}, nil
		}
		return fr, err
	})
	v := &FleetView{Healthy: true, Clusters: []FleetRow{}}
	for i := range results {
		r := &results[i]
		if r.Value == nil {
			continue
		}
		addUnread(&v.Unread, r.Name, r.Value.Unread)
		if r.Value.ManagementError != "" {
			if v.ManagementErrors == nil {
				v.ManagementErrors = map[string]string{}
			}
			v.ManagementErrors[r.Name] = r.Value.ManagementError
		}
		for _, row := range r.Value.Clusters {
			row.ManagementCluster = r.Name
			r.Clusters++
			if !row.Healthy {
				r.Problems++
				v.Healthy = false
			}
			v.Clusters = append(v.Clusters, row)
		}
	}
	sort.SliceStable(v.Clusters, func(i, j int) bool {
		a, b := v.Clusters[i], v.Clusters[j]
		if a.Healthy != b.Healthy {
			return !a.Healthy
		}
		return multicluster.ComparePlace(a.ManagementCluster, a.Namespace, a.Name, b.ManagementCluster, b.Namespace, b.Name) < 0
	})
	v.ManagementClusters = multicluster.Summaries(results)
	return v
}

// RenderFleetView prints the clusters of every management cluster as one table, then the
// management clusters' table.
func RenderFleetView(w io.Writer, v *FleetView, o RenderOptions) error {
	names := make([]string, 0, len(v.ManagementErrors))
	for n := range v.ManagementErrors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := fmt.Fprintf(w, "Management side of %s not checked: %s\n", n, v.ManagementErrors[n]); err != nil {
			return err
		}
	}
	if len(v.Clusters) > 0 {
		if err := RenderFleet(w, &FleetReport{Healthy: v.Healthy, Clusters: v.Clusters}, o); err != nil {
			return err
		}
	} else if _, err := io.WriteString(w, "No clusters found.\n"); err != nil {
		return err
	}
	if err := renderUnread(w, v.ManagementClusters, v.Unread); err != nil {
		return err
	}
	return multicluster.RenderSummary(w, v.Summary)
}

// ProvidersView is `get providers` over several management clusters.
type ProvidersView struct {
	multicluster.Summary
	Providers []ManagedProvider `json:"providers"`
	// CertManager is each management cluster's cert-manager, by context.
	CertManager map[string]*CertManagerStatus `json:"certManager,omitempty"`
	// Unread are, by context, the kinds that could not be read there (RBAC): the view is partial.
	Unread map[string][]authz.Unreadable `json:"unread,omitempty"`
}

// Partial tells whether some kind could not be read on some management cluster: the view misses it.
func (v *ProvidersView) Partial() bool { return len(v.Unread) > 0 }

// ManagedProvider is one provider of one management cluster.
type ManagedProvider struct {
	ManagementCluster string `json:"managementCluster"`
	ProviderStatus
	// CoreContract is the contract of that management cluster's core provider.
	CoreContract string `json:"coreContract,omitempty"`
}

// Problem tells whether the provider is not working: controller not available, webhook not
// answering or a contract the core does not accept.
func (p ProviderStatus) Problem() bool {
	return !p.ControllerAvailable || (p.WebhookAnswers != nil && !*p.WebhookAnswers) || (p.Contract != "" && !p.ContractCompatible)
}

// providersEach runs Providers on every management cluster and compares their versions and
// contracts (drift).
func providersEach(ctx context.Context, members []multicluster.Member) *ProvidersView {
	results := multicluster.Each(ctx, members, nil, func(ctx context.Context, c *cluster.Client) (*Management, error) {
		return Providers(ctx, c)
	})
	v := &ProvidersView{Providers: []ManagedProvider{}}
	for i := range results {
		r := &results[i]
		m := r.Value
		if m == nil {
			continue
		}
		r.Providers = r.Providers[:0]
		for _, p := range m.Providers {
			v.Providers = append(v.Providers, ManagedProvider{ManagementCluster: r.Name, ProviderStatus: p, CoreContract: m.CoreContract})
			r.Providers = append(r.Providers, multicluster.Provider{Name: p.ManifestLabel, Namespace: p.Namespace, Version: p.Version, Contract: p.Contract})
			if p.Problem() {
				r.Problems++
			}
		}
		addUnread(&v.Unread, r.Name, m.Unread)
		if m.CertManager != nil {
			if v.CertManager == nil {
				v.CertManager = map[string]*CertManagerStatus{}
			}
			v.CertManager[r.Name] = m.CertManager
		}
	}
	v.ManagementClusters = multicluster.Summaries(results)
	v.Drift = multicluster.FindDrift(v.ManagementClusters)
	return v
}

// RenderProvidersView prints every management cluster's providers as one table, their
// cert-manager, the management clusters' table and the drift.
func RenderProvidersView(w io.Writer, v *ProvidersView) error {
	t := output.NewTable(w, multicluster.Lead(true, multicluster.Column, providerHeader...)...)
	for _, p := range v.Providers {
		t.Row(multicluster.Lead(true, p.ManagementCluster, providerRow(p.ProviderStatus, p.CoreContract)...)...)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	for _, m := range v.ManagementClusters {
		if cm := v.CertManager[m.Name]; cm != nil {
			if _, err := fmt.Fprintf(w, "cert-manager on %s%s\n", m.Name, certManagerState(cm)); err != nil {
				return err
			}
		}
	}
	if err := renderUnread(w, v.ManagementClusters, v.Unread); err != nil {
		return err
	}
	return multicluster.RenderSummary(w, v.Summary)
}
