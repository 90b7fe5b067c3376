package cluster

import (
	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// capctl logs through internal/logging. Without a logger set, controller-runtime prints a warning
// with a stack trace ("log.SetLogger(...) was never called") 30 s into any run that uses its
// client, which long commands (init, move) and test binaries reach.
func init() { ctrllog.SetLogger(logr.Discard()) }
