//go:build unix

package cluster_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/capctl/capctl/pkg/cluster"
)

// TestKubeconfigOnAFIFO: a kubeconfig given as --kubeconfig on a FIFO (process substitution) is
// read within the input bound, with relative certificate paths resolved against its folder.
func TestKubeconfigOnAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "kubeconfig.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatalf("making a FIFO: %v", err) // every Unix has them
	}
	body := "apiVersion: v1\nkind: Config\ncurrent-context: m\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', certificate-authority: ca.crt}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: m\n  context: {cluster: c, user: u}\n"
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, _ = f.WriteString(body)
			f.Close()
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	kc, err := cluster.LoadKubeconfig(fifo)
	if err != nil {
		t.Fatalf("kubeconfig on a FIFO: %v", err)
	}
	if got := kc.Config.Clusters["c"].CertificateAuthority; got != filepath.Join(dir, "ca.crt") {
		t.Errorf("certificate-authority = %q, want it resolved against %s", got, dir)
	}
}
