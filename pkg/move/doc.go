// Package move owns `capctl move`: discovering the Cluster API object graph of a management cluster and
// moving it to another cluster or to/from a directory, safely (journal, resume, verification).
package move
