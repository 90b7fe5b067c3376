// Command capctl is a clusterctl-compatible command-line tool for Cluster API management clusters.
package main

import (
	"os"

	"github.com/capctl/capctl/internal/iostreams"
)

func main() {
	os.Exit(run(os.Args[1:], iostreams.System()))
}
