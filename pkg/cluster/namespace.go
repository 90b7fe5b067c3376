package cluster

// NamespaceOr is the namespace a command works in: ns when the user named one, else the
// kubeconfig context's namespace (or "default"), as kubectl and clusterctl choose it. Every
// command defaults its namespace here.
func (c *Client) NamespaceOr(ns string) string { return NamespaceOr(ns, c.Namespace) }

// NamespaceOr is the same rule for a command that reads the kubeconfig without connecting
// (generate cluster): ns, else contextNamespace, else "default".
func NamespaceOr(ns, contextNamespace string) string {
	if ns != "" {
		return ns
	}
	if contextNamespace != "" {
		return contextNamespace
	}
	return "default"
}
