package cluster

// NamespaceOr is the namespace a command works in: ns when the user named one, else the
// kubeconfig context's namespace (or "default"), as kubectl and clusterctl choose it. Every
// command defaults its namespace here.
func (c *Client) NamespaceOr(ns string) string {
	if ns != "" {
		return ns
	}
	if c.Namespace != "" {
		return c.Namespace
	}
	return "default"
}
