package upgrade

import (
	"context"

	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/cluster"
)

// CertManagerSource gives the configured cert-manager components (`cert-manager.url`/`.version`).
type CertManagerSource interface {
	CertManager(ctx context.Context) (*certmanager.Components, error)
}

// CertManagerPlan is cert-manager's part of a plan: nil when capctl/clusterctl does not manage
// the cluster's cert-manager (it is left alone, as clusterctl does).
type CertManagerPlan = certmanager.UpgradePlan

// planCertManager asks pkg/certmanager, the one home of the decision, whether cert-manager is
// upgraded; the configured components are fetched only for a cert-manager capctl manages.
func planCertManager(ctx context.Context, c *cluster.Client, src CertManagerSource) (*CertManagerPlan, *certmanager.Components, error) {
	return certmanager.Plan(ctx, c, src.CertManager)
}
