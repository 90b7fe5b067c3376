// Package install applies provider components (and cert-manager) to a management cluster and waits
// for them to work. It is shared by `capctl init` and `capctl upgrade apply`.
//
// Apply takes the processed objects of one component set (one provider version, or cert-manager)
// and:
//
//   - checks every kind before writing anything: a kind that the API server does not serve and that
//     no CRD of the same set defines is refused with an error naming kind, object and file;
//   - applies in levels: Namespaces; then CRDs together with the objects whose kinds the API
//     server already serves, while one watch follows every CRD until it is Established; then
//     objects of CRD-defined kinds, each once its CRD is Established; then webhook configurations
//     (so no object of the set meets a webhook whose server is not running yet). The objects of
//     one level are applied concurrently (ApplyOptions.Concurrency, default 8, bounded with
//     errgroup.SetLimit); a level starts when the one before is done. All with server-side apply
//     (field manager "capctl", conflicts forced: capctl is the installer of these objects,
//     including ones clusterctl created before);
//   - with DryRun, sends every request as a server-side dry run (objects whose kinds come from CRDs
//     that are not installed yet cannot be checked by the server and are reported as such);
//   - on a failure part-way, starts nothing new, lets the requests already sent finish, and returns
//     an *ApplyError that lists what was applied and what was not (in the set's order), names the
//     first failed object and counts the others; applying again converges, because server-side
//     apply is idempotent.
//
// ApplySets does the same for several sets as one install (init: cert-manager and every
// provider), so that each wait is paid once: every set's Namespaces, then every set's CRDs and
// served kinds, and so on; objects that need cert-manager working (NeedsReady: Issuers,
// Certificates) wait for SetsOptions.Ready; each set ends with SetDone (its inventory entry), in
// order. A failure returns a *SetsError with what each set has applied and what not.
//
// Wait waits for what a set of objects needs to be usable: Deployments Available, and (beyond
// clusterctl) every webhook Service with a ready endpoint and every cert-manager CA injection done.
// When it times out it returns a *TimeoutError whose reasons say why (Deployment not available with
// its condition message, pods Pending or failing with their reasons, webhook Service without
// endpoints, CA not injected), not only that time ran out.
//
// The REST mapper of cluster.Client learns kinds of freshly installed CRDs by itself: on a
// no-match it re-reads the group's discovery document. Apply retries such no-matches for kinds
// defined by the CRDs it just installed, because discovery can lag Established by a moment.
package install
