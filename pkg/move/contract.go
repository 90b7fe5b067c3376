package move

import (
	"context"
	"errors"
	"fmt"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
)

// ErrOlderContract refuses a move (or restore) into a management cluster whose Cluster API
// stores Clusters at an older contract than the source's.
var ErrOlderContract = errors.New("the target management cluster is on an older Cluster API contract than the source")

// Contracts are the Cluster API contracts of a move's two sides: the versions their Cluster CRDs
// store (contract.ManagementContract).
type Contracts struct {
	Source string `json:"source,omitempty"`
	Target string `json:"target,omitempty"`
}

// Jump tells whether the move crosses a contract boundary.
func (c Contracts) Jump() bool { return c.Source != "" && c.Target != "" && c.Source != c.Target }

func (c Contracts) String() string {
	if c.Jump() {
		return c.Source + " -> " + c.Target
	}
	return c.Target
}

// checkContracts reads both sides' contracts and refuses a target on an older one. src may be
// nil (a restore): the source contract is then the version of the graph's Cluster API core
// objects as the backup holds them.
func checkContracts(ctx context.Context, src, dst *cluster.Client, g *Graph) (Contracts, error) {
	var cs Contracts
	var err error
	if src != nil {
		if cs.Source, err = contract.ManagementContract(ctx, src); err != nil {
			return cs, fmt.Errorf("source cluster %s: %w", src.Config.Host, err)
		}
	} else if g != nil {
		for _, n := range g.Moved() {
			if gv := n.Obj.GroupVersionKind(); gv.Group == contract.Group {
				cs.Source = gv.Version
				break
			}
		}
	}
	if cs.Target, err = contract.ManagementContract(ctx, dst); err != nil {
		return cs, fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
	}
	if cs.Source != "" && contract.Compare(cs.Target, cs.Source) < 0 {
		from := "the source"
		if src != nil {
			from = "the source cluster " + src.Config.Host
		}
		return cs, fmt.Errorf("%w: %s stores Clusters as %s, but the target cluster %s stores them as %s (CRD %s). "+
			"A move goes to the same contract or a newer one (%s -> %s), never back: objects written at %s would lose what %s added. "+
			"Move to a management cluster on %s or newer (upgrade the target with `capctl upgrade apply`), or leave the clusters where they are",
			ErrOlderContract, from, cs.Source, dst.Config.Host, cs.Target, contract.ClusterCRD,
			cs.Target, cs.Source, cs.Target, cs.Source, cs.Source)
	}
	return cs, nil
}
