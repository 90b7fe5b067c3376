// Command livemgmt starts live management clusters (internal/testing/livemgmt) for the demo and for
// trying capctl by hand, and keeps them until SIGINT/SIGTERM.
//
//	go run ./hack/livemgmt -n 2 -dir /tmp/mgmt
//
// Once ready it writes DIR/<cluster>/kubeconfig for each cluster and DIR/ready. Writing a
// cluster's name into DIR/capd-home hands the in-memory infrastructure over to that cluster's
// CAPD after a move (Host.MoveCAPD); DIR/capd-ready then holds that name.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/capctl/capctl/internal/testing/livemgmt"
)

func main() {
	n := flag.Int("n", 2, "how many management clusters")
	dir := flag.String("dir", "", "folder for kubeconfigs and logs (default: a new temporary folder)")
	flag.Parse()
	if err := run(*n, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "livemgmt:", err)
		os.Exit(1)
	}
}

func run(n int, dir string) error {
	if missing := livemgmt.Missing(livemgmt.ManagerVersions[0]); len(missing) > 0 {
		return fmt.Errorf("binaries missing: %s: run `make live-bins`", strings.Join(missing, ", "))
	}
	start := time.Now()
	h, err := livemgmt.NewHost(livemgmt.Options{Dir: dir, Logf: func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "livemgmt: "+f+"\n", a...)
	}})
	if err != nil {
		return err
	}
	defer h.Stop()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-sig; cancel() }()

	clusters, err := h.StartClusters(ctx, n)
	if err != nil {
		return err
	}
	byName := map[string]*livemgmt.Cluster{}
	for _, c := range clusters {
		byName[c.Name] = c
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "ready"), []byte(fmt.Sprintf("%.0f\n", time.Since(start).Seconds())), 0o600); err != nil {
		return err
	}
	home := clusters[0].Name
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "livemgmt: stopping the management clusters")
			return nil
		case <-time.After(500 * time.Millisecond):
		}
		b, err := os.ReadFile(filepath.Join(h.Dir, "capd-home"))
		want := strings.TrimSpace(string(b))
		if err != nil || want == "" || want == home {
			continue
		}
		c, ok := byName[want]
		if !ok {
			fmt.Fprintf(os.Stderr, "livemgmt: capd-home names %q, not one of the clusters\n", want)
			continue
		}
		if err := h.MoveCAPD(ctx, c); err != nil {
			fmt.Fprintln(os.Stderr, "livemgmt:", err)
			continue
		}
		home = want
		_ = os.WriteFile(filepath.Join(h.Dir, "capd-ready"), []byte(want+"\n"), 0o600)
	}
}
