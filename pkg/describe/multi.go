package describe

import (
	"context"
	"errors"
	"io"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/multicluster"
)

// SummaryView is `describe clusters` over several management clusters: every row names its
// management cluster, and each management cluster has its summary (or why it was not read).
type SummaryView struct {
	multicluster.Summary
	Clusters []ClusterSummary `json:"clusters"`
}

// summarizeEach runs Summarize on every management cluster, concurrently (bounded), with the
// namespace resolved in each one (-n, else that context's namespace; -A every namespace). A
// namespace that one management cluster lacks holds no clusters there; a management cluster
// that cannot be read is reported in its summary, and the others are still shown.
func summarizeEach(ctx context.Context, members []multicluster.Member, opts SummaryRequest) *SummaryView {
	results := multicluster.Each(ctx, members, nil, func(ctx context.Context, c *cluster.Client) ([]ClusterSummary, error) {
		o := opts
		o.Namespace = c.NamespaceOr(opts.Namespace)
		rows, err := Summarize(ctx, c, o)
		var nf *NamespaceNotFoundError
		if errors.As(err, &nf) {
			return nil, nil
		}
		return rows, err
	})
	v := &SummaryView{Clusters: []ClusterSummary{}}
	for i := range results {
		r := &results[i]
		for _, row := range r.Value {
			row.ManagementCluster = r.Name
			r.Clusters++
			if row.Available != "True" {
				r.Problems++
			}
			v.Clusters = append(v.Clusters, row)
		}
	}
	v.ManagementClusters = multicluster.Summaries(results)
	return v
}

// RenderSummaryView prints the clusters of every management cluster as one table, then the
// management clusters' own table.
func RenderSummaryView(w io.Writer, v *SummaryView, o RenderOptions) error {
	if len(v.Clusters) > 0 {
		if err := RenderSummary(w, v.Clusters, o); err != nil {
			return err
		}
	} else if _, err := io.WriteString(w, "No clusters found.\n"); err != nil {
		return err
	}
	return multicluster.RenderSummary(w, v.Summary)
}
