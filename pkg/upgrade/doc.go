// Package upgrade owns `capctl upgrade`: planning and applying provider upgrades within and across
// contracts, and planning Kubernetes version upgrades across a fleet of workload clusters.
package upgrade
