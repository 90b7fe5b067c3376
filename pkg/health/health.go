// Package health is the look a fleet rollout's soak takes at one cluster beyond its conditions
// and Machines: the problems found and the kinds that could not be read. The rollout engine
// takes a Check; the command wires diagnose's rules into it, so neither feature imports the
// other.
package health

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Check reports one cluster's problems (warnings and errors) and the kinds it could not read.
// The soak records what it reports when the soak begins and stops the wave at a new problem; an
// error, or a kind it could not read, fails the soak (a look that cannot see passes nothing).
type Check func(ctx context.Context, c client.Client, namespace, name string) (problems []Problem, unread []string, err error)

// Problem is one problem a Check found.
type Problem struct {
	// Key identifies the problem across looks (its rule and object): one the soak's baseline
	// holds is not new.
	Key string
	// Rule and Summary name it in the stop's reason; Evidence is shown under it.
	Rule, Summary string
	Evidence      []string
}
