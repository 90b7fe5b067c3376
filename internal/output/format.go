package output

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Format is an output format named by -o/--output.
type Format string

// The formats every command with -o accepts. Text, the default, is for people; JSON and YAML are
// one document for programs.
const (
	Text Format = "text"
	JSON Format = "json"
	YAML Format = "yaml"
	// Short is an extra format only `version` accepts (clusterctl's `version -o short`).
	Short Format = "short"
)

// Common is the vocabulary of every -o flag.
var Common = []Format{Text, JSON, YAML}

// Structured reports whether f is one document for programs (json or yaml).
func (f Format) Structured() bool { return f == JSON || f == YAML }

// formatValue is the pflag.Value behind -o: it validates at parse time, so a bad format is a flag
// error (printed with the usage) before any file, network or cluster is touched.
type formatValue struct {
	p       *Format
	allowed []Format
}

func (v *formatValue) String() string { return string(*v.p) }
func (v *formatValue) Type() string   { return "format" }

func (v *formatValue) Set(s string) error {
	f := Format(strings.ToLower(strings.TrimSpace(s)))
	if f == "" {
		f = Text
	}
	if !slices.Contains(v.allowed, f) {
		return fmt.Errorf("invalid output format %q: use one of %s", s, join(v.allowed))
	}
	*v.p = f
	return nil
}

func join(fs []Format) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// AddFormatFlag registers -o/--output on cmd, storing into p (set to text, the default). what
// says what the structured formats print (e.g. "the plan and the result"); extra adds formats
// beyond text, json and yaml for the rare command that needs one (version's short).
func AddFormatFlag(cmd *cobra.Command, p *Format, what string, extra ...Format) {
	allowed := append(slices.Clone(Common), extra...)
	*p = Text
	usage := "Output format: one of " + join(allowed)
	if what != "" {
		usage += " (" + what + ")"
	}
	cmd.Flags().VarP(&formatValue{p: p, allowed: allowed}, "output", "o", usage)
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		s := make([]string, len(allowed))
		for i, f := range allowed {
			s[i] = string(f)
		}
		return s, cobra.ShellCompDirectiveNoFileComp
	})
}

// WriteStructured prints v as indented JSON or as YAML: every command's machine-readable output
// has the same shape (JSON indented by two spaces, a trailing newline).
func WriteStructured(w io.Writer, f Format, v any) error {
	var (
		b   []byte
		err error
	)
	switch f {
	case JSON:
		b, err = json.MarshalIndent(v, "", "  ")
		b = append(b, '\n')
	case YAML:
		b, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("unsupported structured output format %q: use json or yaml", f)
	}
	if err != nil {
		return fmt.Errorf("rendering %s output: %w", f, err)
	}
	_, err = w.Write(b)
	return err
}

// Render prints v as one JSON or YAML document when f is structured, else calls text: the one
// switch between people's and programs' output.
func Render(w io.Writer, f Format, v any, text func(io.Writer) error) error {
	if f.Structured() {
		return WriteStructured(w, f, v)
	}
	return text(w)
}
