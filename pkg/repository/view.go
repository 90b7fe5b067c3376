package repository

import (
	"fmt"
	"io"
	"strings"

	"github.com/capctl/capctl/internal/output"
)

// This file holds the views of the repository answers (components, the registry, a mirror, a
// cache clean), so that cmd only calls them.

// WriteSummary prints what `generate provider --describe` shows: the provider, its version,
// contract and file, the target namespace, the variables (required, or their default) and the
// images.
func (c *Components) WriteSummary(w io.Writer) error {
	fmt.Fprintf(w, "Name:               %s\n", c.Provider.Name)
	fmt.Fprintf(w, "Type:               %s\n", c.Provider.Type)
	fmt.Fprintf(w, "URL:                %s\n", c.Provider.RepositoryURL())
	fmt.Fprintf(w, "Version:            %s\n", c.Version)
	fmt.Fprintf(w, "Contract:           %s\n", c.Contract)
	fmt.Fprintf(w, "File:               %s\n", c.File)
	fmt.Fprintf(w, "TargetNamespace:    %s\n", c.TargetNamespace)
	if len(c.Variables) > 0 {
		fmt.Fprintln(w, "Variables:")
		for _, v := range c.Variables {
			note := ""
			if v.Nested {
				note = ", only inside another variable's default"
			}
			if v.Required {
				fmt.Fprintf(w, "  - %s (required%s)\n", v.Name, note)
			} else {
				fmt.Fprintf(w, "  - %s (default: %s%s)\n", v.Name, v.Default, note)
			}
		}
	}
	if len(c.Images) > 0 {
		fmt.Fprintln(w, "Images:")
		for _, i := range c.Images {
			fmt.Fprintf(w, "  - %s\n", i)
		}
	}
	return nil
}

// WriteObjects prints the objects as YAML documents on out or, when path is set, into a file
// that is 0600 before its first byte (substituted values may hold credentials, such as
// *_B64ENCODED_CREDENTIALS), then says on errOut what it wrote there.
func (c *Components) WriteObjects(out, errOut io.Writer, path string) error {
	b, err := output.ObjectsYAML(c.Objects)
	if err != nil {
		return err
	}
	if path == "" {
		_, err = out.Write(b)
		return err
	}
	if err := output.WritePrivateFile(path, b); err != nil {
		return err
	}
	_, err = fmt.Fprintf(errOut, "Wrote %d objects of %s %s to %s\n", len(c.Objects), c.Provider.ManifestLabel(), c.Version, path)
	return err
}

// repositoryRow is one provider in `config repositories -o yaml|json`, with clusterctl's keys.
type repositoryRow struct {
	Name         string `json:"Name"`
	ProviderType string `json:"ProviderType"`
	URL          string `json:"URL"`
	File         string `json:"File"`
}

// RenderRepositories prints the providers of a registry as a table (NAME, TYPE, URL, FILE), or
// as a list with clusterctl's keys when f is structured.
func RenderRepositories(w io.Writer, f output.Format, providers []Provider) error {
	var rows []repositoryRow
	for _, p := range providers {
		rows = append(rows, repositoryRow{Name: p.Name, ProviderType: string(p.Type), URL: p.RepositoryURL(), File: p.ComponentsFile()})
	}
	return output.Render(w, f, rows, func(w io.Writer) error {
		t := output.NewTable(w, "NAME", "TYPE", "URL", "FILE")
		for _, r := range rows {
			t.Row(r.Name, r.ProviderType, r.URL, r.File)
		}
		return t.Flush()
	})
}

// Render prints what Mirror wrote as comments, then the clusterctl.yaml fragment that uses it,
// or the result as data when f is structured.
func (r *MirrorResult) Render(w io.Writer, f output.Format) error {
	return output.Render(w, f, r, func(out io.Writer) error {
		if IsOCI(r.Dir) {
			fmt.Fprintf(out, "# OCI artifacts published by capctl repository mirror under %s\n", r.Dir)
		} else {
			fmt.Fprintf(out, "# Local repository written by capctl repository mirror: %s\n", r.Dir)
		}
		line := func(what string, m MirroredVersion) {
			fmt.Fprintf(out, "#   %s %s: %s\n", what, m.Version, strings.Join(m.Files, ", "))
			if m.Digest != "" {
				state := "pushed"
				if m.Unchanged {
					state = "already there"
				}
				fmt.Fprintf(out, "#     %s@%s (%s)\n", m.Dir, m.Digest, state)
			}
		}
		for _, m := range r.Providers {
			line(fmt.Sprintf("%s %s", m.Type, m.Name), m)
		}
		if m := r.CertManager; m != nil {
			line("cert-manager", *m)
		}
		fmt.Fprintln(out, "# Add the following to clusterctl.yaml to use it:")
		_, err := fmt.Fprint(out, r.Config)
		return err
	})
}

// Render prints what CleanCache removed (label and version name what was asked for, "" for the
// whole cache or every version), or the result as data when f is structured.
func (r *CacheCleanResult) Render(w io.Writer, f output.Format, label, version string) error {
	return output.Render(w, f, r, func(w io.Writer) error {
		if r.Note != "" {
			_, err := fmt.Fprintln(w, r.Note)
			return err
		}
		of := ""
		if label != "" {
			of = " of " + label
			if version != "" {
				of += " " + version
			}
		}
		if len(r.Removed) == 0 {
			_, err := fmt.Fprintf(w, "Nothing cached%s in %s\n", of, r.Dir)
			return err
		}
		fmt.Fprintf(w, "Removed %d cached files (%s)%s from %s\n", r.Files, humanBytes(r.Bytes), of, r.Dir)
		if len(r.SharedWith) > 0 {
			fmt.Fprintf(w, "Also removed for the providers of the same repository: %s\n", strings.Join(r.SharedWith, ", "))
		}
		return nil
	})
}

// humanBytes writes a size in B, KiB or MiB.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
