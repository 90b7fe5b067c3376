// Package initialize owns `capctl init`: installing cert-manager and the chosen providers into a management
// cluster and recording them in the clusterctl-compatible Provider inventory.
package initialize
