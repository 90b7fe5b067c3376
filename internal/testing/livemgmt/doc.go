// Package livemgmt runs live management clusters on this host for end-to-end tests and the demo:
// etcd, kube-apiserver and kube-controller-manager (from `make envtest-bins`), and, once
// `capctl init` installed the providers, the real Cluster API managers (core, kubeadm bootstrap,
// kubeadm control plane, CAPD with its in-memory backend; `make live-bins`) as host processes.
// Every Cluster API object's status is written by those controllers.
//
// What the harness stands in for, and nothing else:
//   - a kubelet (and the scheduler's binding): the Node, binding the providers' pods to it,
//     running each pod's manager container as a process (binary chosen by the image's name and
//     tag, the container's own args and env, free host ports for its webhook and health
//     listeners), mounting its Secret volumes as folders, and reporting pod status from /readyz;
//   - the EndpointSlice controller for those pods: slices with the host's address and the real
//     ports, so that kube-apiserver (--enable-aggregator-routing) routes webhook and conversion
//     calls for the providers' Services to the processes. No webhook configuration or CRD
//     clientConfig is rewritten;
//   - cert-manager and its cainjector: each Certificate's Secret (self-signed, as the providers'
//     selfSigned Issuers ask; one certificate per DNS-name set per host) and the CA bundles of
//     objects annotated cert-manager.io/inject-ca-from.
//
// So `capctl init` with its default wait sees the providers become available, `upgrade apply`
// rolls the Deployments and the new pods run the new version's binaries, and deleting a
// provider stops its process.
//
// Each management cluster's managers run in a Linux network namespace of its own (netns.go), so
// every cluster runs its own CAPD although CAPD binds fixed ports (:19000, 20000 and up for the
// in-memory workload API servers): the API server reaches the managers' webhooks at the
// namespace's veth address, the managers reach every API server of the host at its usual
// 127.0.0.1 address through proxies inside the namespace, and the workload clusters answer on
// the namespace's loopback, where that cluster's managers (and Cluster.Command) reach them.
// After a move, MoveCAPD hands the moved clusters to the target's CAPD (restarting it only where
// its version restores listeners at start alone); the source keeps its own. Test traffic goes only to loopback and to the namespaces' addresses
// (10.213.0.0/16). Where namespaces cannot be made (not root, no iproute2, LIVEMGMT_NETNS=off)
// the clusters share the host's network and one CAPD process, which reconciles one "home"
// cluster (the first, or the one MoveCAPD names) and serves every cluster's CAPD webhooks, under
// a host-wide lock; Host.Shared says why.
//
// Use in a test:
//
//	host, clusters := livemgmt.Start(t, 2) // skips outside CI when binaries are missing
//	cfg, _ := livemgmt.WriteConfig(t.TempDir(), testenv.FixturesDir(t))
//	// CLUSTER_TOPOLOGY=true capctl init --kubeconfig clusters[0].Kubeconfig --config cfg -i docker
//	// ... create a cluster on clusters[0], move it to clusters[1], then:
//	_ = host.MoveCAPD(ctx, clusters[1]) // after a move to clusters[1]
//	fmt.Print(host.Diagnose(ctx, clusters[1], capctlBin, "ns", "name")) // when stuck
//
// Logs of every process are in Host.Dir (kept when the test failed or LIVEMGMT_KEEP is set).
package livemgmt
