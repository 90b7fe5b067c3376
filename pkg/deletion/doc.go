// Package deletion owns `capctl delete`: finding the components of installed providers (and,
// when asked, of cert-manager) in a management cluster, planning what goes and what stays, and
// deleting them with their inventory entries.
//
// BuildPlan (plan.go: validation, resolving the selections, sorting the components to their
// providers, ordering; list.go: discovery and listing) works out a Plan and writes nothing;
// Apply (apply.go) deletes what a Plan lists, retrying transient errors through cluster.Retry.
package deletion
