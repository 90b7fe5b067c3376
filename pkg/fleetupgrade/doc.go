// Package fleetupgrade owns the fleet's Kubernetes upgrade (`capctl upgrade plan|apply
// --kubernetes-version`, `capctl upgrade history`): planning every workload cluster's path minor
// by minor, rolling it wave by wave with gates, soaks and windows, saved plan files, and the audit
// record of every rollout.
package fleetupgrade
