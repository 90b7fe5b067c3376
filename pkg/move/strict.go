package move

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrSchemaDrops is a restore refused before its first object is written because the target's
// schemas do not have fields the backup's objects hold.
var ErrSchemaDrops = errors.New("the target's schemas do not have fields the backup holds")

// strictDryRun sends every object the restore creates to the target as a server-side dry run
// with strict field validation, before the first object is written. A field the target's schema
// does not have would be dropped silently by a plain create, and the verification would then
// fail on every re-run; here the server names it, with its object, and nothing is written. An
// object the target already holds (a re-run) is checked by the verification as before.
func (m *mover) strictDryRun(ctx context.Context) error {
	var mu sync.Mutex
	var unknown []string
	err := m.parallel(ctx, m.tg.Moved(), func(ctx context.Context, n *Node) error {
		o, err := cleanForCreate(n.Obj, func(u types.UID) (types.UID, bool) { return u, true })
		if err != nil {
			return err
		}
		err = m.dst.Create(ctx, o, client.DryRunAll, client.FieldValidation("Strict"))
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return nil
		case apierrors.IsBadRequest(err) || apierrors.IsInvalid(err):
			mu.Lock()
			unknown = append(unknown, fmt.Sprintf("%s: %v", n.Ref, err))
			mu.Unlock()
			return nil
		}
		return fmt.Errorf("checking %s against the target's schema (server-side dry run): %w", n.Ref, err)
	})
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%w: %d object(s) would not be stored as the backup holds them (a re-run cannot change that):\n  - %s\nNothing of the backup was written. Install the provider versions whose CRDs have these fields in the target (capctl init, capctl upgrade apply), then restore again",
			ErrSchemaDrops, len(unknown), strings.Join(unknown, "\n  - "))
	}
	return nil
}
