package templates

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/variables"
)

// InputError is input the user fixes by changing a flag or an argument; it is found before any
// network or cluster access (the command shows its usage with it).
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{msg: fmt.Sprintf(format, args...)}
}

// IsInputError reports whether err is (or wraps) an *InputError.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

// Values are the variables given on the command line: --set NAME=VALUE (repeatable) and a
// --values file (a YAML map of NAME: value).
type Values struct {
	Set  []string
	File string
}

// parsedValues are Values read and checked: the --set map and the --values map.
type parsedValues struct {
	set, file map[string]string
}

// parse checks --set and reads the --values file (a local file: no network). reserved maps the
// names a flag sets to that flag; they may not be given as variables.
func (v Values) parse(reserved map[string]string) (parsedValues, error) {
	set, err := v.parseSet(reserved)
	p := parsedValues{set: set, file: map[string]string{}}
	if err != nil || v.File == "" {
		return p, err
	}
	// Resolve reads no network and has no context; the read is bounded all the same.
	b, err := userinput.ReadFile(context.Background(), v.File)
	if err != nil {
		return p, fmt.Errorf("--values: %w", err)
	}
	var raw map[string]any
	if err := userinput.Unmarshal(b, &raw); err != nil {
		return p, fmt.Errorf("--values %s: not a YAML map of variables: %w", v.File, err)
	}
	for k, val := range raw {
		if flag, ok := reserved[k]; ok {
			return p, inputErrorf("--values %s: %s is set by %s", v.File, k, flag)
		}
		s, err := valueText(val)
		if err != nil {
			return p, fmt.Errorf("--values %s: %s: %w", v.File, k, err)
		}
		p.file[k] = s
	}
	return p, nil
}

// parseSet checks the --set values (no file is read).
func (v Values) parseSet(reserved map[string]string) (map[string]string, error) {
	set := map[string]string{}
	for _, s := range v.Set {
		name, val, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, inputErrorf("invalid --set %q: use NAME=VALUE", s)
		}
		if flag, ok := reserved[name]; ok {
			return nil, inputErrorf("--set %s: %s is set by %s", name, name, flag)
		}
		set[name] = val
	}
	return set, nil
}

// valueText is the variable text of a --values entry. A structured value is written as JSON on
// one line (valid YAML flow style), so that `POD_CIDR: ["10.0.0.0/16"]` works as the template
// expects.
func valueText(val any) (string, error) {
	switch t := val.(type) {
	case nil:
		return "", nil
	case string:
		return t, nil
	case map[string]any, []any:
		j, err := yaml.Marshal(t)
		if err != nil {
			return "", err
		}
		jj, err := yaml.YAMLToJSON(j)
		if err != nil {
			return "", err
		}
		return string(jj), nil
	default:
		return fmt.Sprint(t), nil
	}
}

// userLookup is what the user set, in clusterctl's precedence plus capctl's flags:
// --set > --values > environment > config file.
func (p parsedValues) userLookup(cfg *config.Config) variables.Lookup {
	return variables.Chain(variables.FromMap(p.set), variables.FromMap(p.file), variables.FromConfig(cfg))
}

// missingVariables rewrites a *variables.MissingError into one that says how to set them.
func missingVariables(err error, hint string) error {
	var me *variables.MissingError
	if errors.As(err, &me) {
		return &MissingVariablesError{Names: me.Names, hint: hint}
	}
	return err
}

// MissingVariablesError lists the required variables nobody set, and how to set them.
type MissingVariablesError struct {
	Names []string
	hint  string
}

func (e *MissingVariablesError) Error() string {
	return fmt.Sprintf("value for variables [%s] is not set: set them with --set NAME=VALUE, a --values file, environment variables or the config file%s",
		strings.Join(e.Names, ", "), e.hint)
}

// YAMLRequest is `generate yaml`: any YAML processed with the variable engine.
type YAMLRequest struct {
	// From is a file, an http(s) URL, a GitHub file URL or "-" for Stdin.
	From   string
	Values Values
	// ListVariables lists the variables instead of substituting them.
	ListVariables bool
	Stdin         io.Reader
	HTTPClient    *http.Client
}

// GenerateYAML fetches the YAML and substitutes its variables (--set > --values > environment >
// the Env's configuration file), or lists them; the Env's logger hears warnings (a token
// withheld).
func GenerateYAML(ctx context.Context, e env.Env, req YAMLRequest) (*Result, error) {
	vals, err := req.Values.parse(nil)
	if err != nil {
		return nil, err
	}
	cfg, err := configOf(ctx, e)
	if err != nil {
		return nil, err
	}
	b, name, err := Fetch(ctx, req.From, fetchOptions(cfg, req.Stdin, req.HTTPClient, e.Log))
	if err != nil {
		return nil, err
	}
	res, err := Render(ctx, Input{Name: name, Template: b, Lookup: vals.userLookup(cfg), ListOnly: req.ListVariables})
	if err != nil {
		return nil, missingVariables(err, "")
	}
	return res, nil
}
