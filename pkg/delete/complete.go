package deletion

import "github.com/capctl/capctl/pkg/authz"

// Complete refuses a plan built from an incomplete listing. A kind delete could not list may
// hold the providers' components: deleting what was seen and then the inventory entries would
// leave those objects behind with nothing recording them.
func (p *Plan) Complete() error {
	if len(p.Unlisted) == 0 {
		return nil
	}
	return &authz.IncompleteError{Command: "capctl delete", Unreadable: p.Unlisted}
}
