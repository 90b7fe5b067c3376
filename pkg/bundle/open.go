package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/capctl/capctl/internal/targz"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/replay"
)

// Opened is a bundle read back: its manifest and files.
type Opened struct {
	Path     string
	Manifest Manifest
	files    map[string][]byte
}

// Open reads a bundle file. The file is input from anyone: its uncompressed size is bounded (by
// DefaultMaxSize, the bound diagnose bundle writes within by default, or a larger
// --max-input-size), its names must be plain relative paths, and it must hold a capctl manifest.
func Open(ctx context.Context, file string) (*Opened, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("--from-bundle: %w", err)
	}
	defer f.Close()
	o := &Opened{Path: file, files: map[string][]byte{}}
	err = targz.Read(ctx, f, file, max(userinput.Max(), DefaultMaxSize), func(name string, data []byte) error {
		o.files[name] = data
		return nil
	})
	switch {
	case errors.Is(err, targz.ErrNotGzip):
		return nil, fmt.Errorf("--from-bundle %s: not a gzipped bundle (capctl diagnose bundle writes one): %w", file, err)
	case err != nil:
		return nil, fmt.Errorf("--from-bundle %s: %w (capctl writes none such)", file, err)
	}
	m, ok := o.files["manifest.json"]
	if !ok {
		return nil, fmt.Errorf("--from-bundle %s: no manifest.json: not a capctl support bundle", file)
	}
	if err := json.Unmarshal(m, &o.Manifest); err != nil || !strings.HasSuffix(o.Manifest.Kind, " SupportBundle") {
		return nil, fmt.Errorf("--from-bundle %s: manifest.json is not a capctl support bundle's", file)
	}
	return o, nil
}

// File is one file of the bundle.
func (o *Opened) File(name string) ([]byte, bool) {
	b, ok := o.files[name]
	return b, ok
}

// Env is the run's environment for a command replayed from the bundle: the management cluster
// the bundle was made of, or each of several (as --contexts chose them), answered by the bundle's
// records (no kubeconfig is read, nothing is dialled), and the bundle's time as the clock.
func (o *Opened) Env() (env.Env, error) {
	created := o.Manifest.Created
	var e env.Env
	if len(o.Manifest.ManagementClusters) == 0 {
		ns := ""
		if len(o.Manifest.Namespaces) > 0 {
			ns = o.Manifest.Namespaces[0]
		}
		c, err := o.client("", o.Manifest.ManagementCluster, ns)
		if err != nil {
			return env.Env{}, err
		}
		e = env.One(c)
	} else {
		e.Chosen = true
		for _, m := range o.Manifest.ManagementClusters {
			if m.Error != "" {
				e.Management = append(e.Management, multicluster.Member{Context: m.Context, Err: errors.New(m.Error)})
				continue
			}
			if m.Dir != contextDir(m.Context) {
				return env.Env{}, fmt.Errorf("--from-bundle %s: management cluster %q is in folder %q, not %q: the manifest was not written by capctl", o.Path, m.Context, m.Dir, contextDir(m.Context))
			}
			c, err := o.client(m.Dir, m.Context, m.Namespace)
			if err != nil {
				return env.Env{}, err
			}
			e.Management = append(e.Management, multicluster.Member{Context: m.Context, Client: c})
		}
	}
	e.Now = func() time.Time { return created }
	return e, nil
}

// client is the replay client of the management cluster whose record is in folder dir.
func (o *Opened) client(dir, context, namespace string) (*cluster.Client, error) {
	name := dir + ReplayFile
	data, ok := o.files[name]
	if !ok {
		why := "it was made by a capctl that did not record its views"
		for _, l := range o.Manifest.LeftOut {
			if strings.Contains(l.What, name) {
				why = "it was left out: " + l.Why
			}
		}
		return nil, fmt.Errorf("--from-bundle %s: the bundle has no %s to replay (%s); make a new one with `capctl diagnose bundle`", o.Path, name, why)
	}
	var rec replay.Recording
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("--from-bundle %s: %s: %w", o.Path, name, err)
	}
	c, err := replay.Client(&rec, context, namespace)
	if err != nil {
		return nil, fmt.Errorf("--from-bundle %s: %s: %w", o.Path, name, err)
	}
	return c, nil
}
