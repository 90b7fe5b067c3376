// Package clusterinit owns `capctl init`: installing cert-manager and the chosen providers into a
// management cluster and recording them in the clusterctl-compatible Provider inventory
// (clusterctl-spec §5–7). Its directory is pkg/init; the package is named clusterinit so that it
// is not mistaken for pkg/install (applying components), which it uses.
//
// Init (one call per run) does, in order:
//
//  1. parse the requests (ParseRequests: name[:version] per type; `-` opts out of a default);
//  2. read the inventory and check that an installed Cluster API stores v1beta2 (pkg/contract);
//     with no core provider installed this is a first run, and cluster-api, kubeadm bootstrap and
//     kubeadm control plane are added unless named;
//  3. resolve every provider's version and contract (pkg/repository); a provider already installed
//     at the same version and namespace is skipped (an identical re-run is a no-op that says so),
//     at another version is an error pointing to `capctl upgrade apply`;
//  4. fetch and process components: variables (pkg/variables), target namespace, image overrides,
//     clusterctl's labels, install order; the problems of steps 3 and 4 are reported together;
//  5. validate (unless Validate is false): one instance per provider, the core's contract is
//     v1beta2 and every provider's contract is compatible with it, CRD names are <plural>.<group>;
//  6. preflight: fetch cert-manager's components when no cert-manager is there, and check the kind
//     of every object to install. Nothing is written before this point, so a refused init
//     changes nothing;
//  7. ensure the inventory CRD (the first write, in the background) and decide about cert-manager
//     (pkg/certmanager, clusterctl's probe): skip when working, install otherwise;
//  8. install cert-manager's objects and every provider's as one install (install.ApplySets): all
//     Namespaces, all CRDs with the objects of served kinds (one watch follows the CRDs), then
//     the objects of CRD-defined kinds; then cert-manager's webhook configurations and the wait
//     for cert-manager to work (its pods start while the providers are applied); then per
//     provider its Issuers and Certificates, its webhook configurations and, in type order, its
//     inventory entry, so a provider appears in the inventory only when all its objects are
//     applied. Without --wait-providers only the CRDs whose kinds are used are waited for (the
//     API server establishes the others; clusterctl waits for none);
//  9. wait (by default) for the providers' Deployments, webhook endpoints and CA injection.
//
// A failure part-way returns an *IncompleteError listing what is installed (recorded), what was
// partly applied (with the install as one, usually every provider) and the command that
// completes the installation. DryRun sends every write as a
// server-side dry run and writes no inventory.
//
// ListImages resolves the same providers without touching a cluster when none is given, and
// returns every image the providers (and cert-manager, when it would be installed) would run.
package clusterinit
