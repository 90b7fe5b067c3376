package diagnose

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/health"
	"github.com/capctl/capctl/pkg/multicluster"
)

// RunCluster is `capctl diagnose cluster NAME` on the Env's management cluster, the namespace
// resolved (the request's, else the kubeconfig context's).
func RunCluster(ctx context.Context, e env.Env, req ClusterRequest) (*Report, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c, ns, err := e.SingleIn(req.Namespace)
	if err != nil {
		return nil, err
	}
	req.Namespace = ns
	return Cluster(ctx, c, req)
}

// ExitCode is 3 for a partial view, 2 when a problem was found, else 0.
func (r *Report) ExitCode() int { return multicluster.ViewExit(!r.Partial(), !r.Healthy, true) }

// SoakHealth is the fleet soak's health check (a health.Check, wired by the
// command): `diagnose cluster`'s rules, their warnings and errors, and the kinds they could not
// read, which fail the soak.
func SoakHealth(ctx context.Context, c client.Client, namespace, name string) ([]health.Problem, []string, error) {
	rep, err := Cluster(ctx, c, ClusterRequest{Namespace: namespace, Name: name})
	if err != nil {
		return nil, nil, err
	}
	var problems []health.Problem
	for _, f := range rep.Findings {
		if f.Severity != SeverityInfo {
			problems = append(problems, health.Problem{Key: f.Rule + " " + f.Object, Rule: f.Rule, Summary: f.Summary,
				Evidence: append([]string{f.Explanation}, f.Evidence...)})
		}
	}
	unread := make([]string, 0, len(rep.Unread))
	for _, u := range rep.Unread {
		unread = append(unread, u.String())
	}
	return problems, unread, nil
}

var _ health.Check = SoakHealth
