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
// CAPD binds fixed ports (:19000, 20000+), so a host runs one: it reconciles one "home" cluster
// (the first, or the one MoveCAPD names after a move) and serves every cluster's CAPD webhooks.
// A host-wide lock (next to the managers' cache folder) makes other programs wait for it.
//
// Use in a test:
//
//	host, clusters := livemgmt.Start(t, 2) // skips outside CI when binaries are missing
//	cfg, _ := livemgmt.WriteConfig(t.TempDir(), testenv.FixturesDir(t))
//	// CLUSTER_TOPOLOGY=true capctl init --kubeconfig clusters[0].Kubeconfig --config cfg -i docker
//	// ... create a cluster on clusters[0], move it to clusters[1], then:
//	_ = host.MoveCAPD(ctx, clusters[1])
//	fmt.Print(host.Diagnose(ctx, clusters[1], capctlBin, "ns", "name")) // when stuck
//
// Logs of every process are in Host.Dir (kept when the test failed or LIVEMGMT_KEEP is set).
package livemgmt
