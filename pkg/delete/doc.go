// Package deletion owns `capctl delete`: finding the components of installed providers (and,
// when asked, of cert-manager) in a management cluster, planning what goes and what stays, and
// deleting them with their inventory entries.
package deletion
