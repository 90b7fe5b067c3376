// Package move moves Cluster API object graphs between management clusters, and backs them up to
// and restores them from directories. Run takes one Request (source, target, from/to directory,
// dry run), resolves it once into a plan (its mode and the options with their defaults), connects
// the clusters that mode needs and runs it; Scope.resolve is the move's one namespace default. Every move keeps a journal in the source with a copy of the objects as they were
// before it changed anything: the target is written and verified only from that copy, and an
// interrupted move (even killed) is finished by a re-run or --resume.
package move
