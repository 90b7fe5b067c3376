// Package upgrade owns `capctl upgrade plan|apply` for providers: planning and applying provider
// upgrades within and across contracts. The fleet's Kubernetes upgrade is pkg/fleetupgrade.
package upgrade
