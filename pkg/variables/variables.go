package variables

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/drone/envsubst/v2"
	"github.com/drone/envsubst/v2/parse"

	"github.com/capctl/capctl/pkg/config"
)

// Variable is one variable a document uses.
type Variable struct {
	Name string
	// Default is the default text of the variable's first occurrence outside any default, in
	// clusterctl's notation (a nested expression shows as `${NAME}`). Empty when there is none.
	Default string
	// HasDefault reports a default operator (`:=`, `=`, `:-`, `:?`, `:+`), even an empty one.
	HasDefault bool
	// Required is true when a value must be given: no default text, or an empty one.
	Required bool
	// Nested is true when the variable only appears inside another variable's default
	// (clusterctl does not list these).
	Nested bool
}

// Lookup returns a variable's value and whether it is set (an empty value counts as set).
type Lookup func(name string) (string, bool)

// MissingError lists every required variable without a value.
type MissingError struct {
	Names []string // sorted
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("value for variables [%s] is not set. Please set the value using os environment variables or the clusterctl config file",
		strings.Join(e.Names, ", "))
}

// legacyRE matches `${ VAR }` forms with whitespace around the name; clusterctl removes that
// whitespace before parsing (its regular expression requires at least one blank; a match without
// any blank is left unchanged by the removal, so one pattern serves).
var legacyRE = regexp.MustCompile(`\$\{\s*[A-Za-z0-9_$]+\s*\}`)

var blankRE = regexp.MustCompile(`\s`)

// Normalize rewrites the legacy whitespace forms `${ VAR }`, `${ VAR}`, `${VAR }` to `${VAR}`, as
// clusterctl does before substitution.
func Normalize(text string) string {
	if !strings.Contains(text, "${") {
		return text
	}
	return legacyRE.ReplaceAllStringFunc(text, func(m string) string { return blankRE.ReplaceAllString(m, "") })
}

// ParseError is a template the variable grammar rejects.
type ParseError struct {
	Err error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid variable expression: %v (variables are written ${NAME}, ${NAME:=default}; write $${NAME} for a literal ${NAME})", e.Err)
}
func (e *ParseError) Unwrap() error { return e.Err }

func parseTree(text string) (tree *parse.Tree, err error) {
	if i := strings.IndexByte(text, 0); i >= 0 {
		// envsubst's scanner takes a NUL for the end of input and silently drops the rest of the
		// text (clusterctl has that bug); refuse instead.
		return nil, &ParseError{Err: fmt.Errorf("NUL byte at offset %d: not a text document", i)}
	}
	defer func() {
		if r := recover(); r != nil {
			err = &ParseError{Err: fmt.Errorf("parser failure: %v", r)}
		}
	}()
	tree, err = parse.Parse(text)
	if err != nil {
		return nil, &ParseError{Err: err}
	}
	return tree, nil
}

// isDefaultOp reports the operators that make the arguments a default value.
func isDefaultOp(name string) bool {
	switch name {
	case "=", ":=", ":-", ":?", ":+":
		return true
	}
	return false
}

// defaultText builds a node's default text the way clusterctl does: text arguments verbatim,
// nested expressions as `${NAME}`.
func defaultText(n *parse.FuncNode) string {
	var b strings.Builder
	for _, a := range n.Args {
		switch w := a.(type) {
		case *parse.FuncNode:
			b.WriteString("${" + w.Param + "}")
		case *parse.TextNode:
			b.WriteString(w.Value)
		}
	}
	return b.String()
}

// topLevel calls fn for each expression outside any default, in document order.
func topLevel(root parse.Node, fn func(*parse.FuncNode)) {
	switch v := root.(type) {
	case *parse.ListNode:
		for _, n := range v.Nodes {
			topLevel(n, fn)
		}
	case *parse.FuncNode:
		fn(v)
	}
}

// List returns the variables text uses, in order of first appearance (an expression before the
// ones nested in its arguments).
func List(text []byte) ([]Variable, error) {
	tree, err := parseTree(Normalize(string(text)))
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	var out []Variable
	top := map[string]bool{}
	var visit func(n parse.Node, nested bool)
	visit = func(n parse.Node, nested bool) {
		switch v := n.(type) {
		case *parse.ListNode:
			for _, c := range v.Nodes {
				visit(c, nested)
			}
		case *parse.FuncNode:
			i, seen := index[v.Param]
			if !seen {
				i = len(out)
				index[v.Param] = i
				out = append(out, Variable{Name: v.Param, Nested: true})
			}
			// The first occurrence outside defaults decides (clusterctl); a nested-only variable
			// takes its first nested occurrence.
			if (!nested && !top[v.Param]) || (!seen && nested) {
				if !nested {
					top[v.Param] = true
					out[i].Nested = false
				}
				d := defaultText(v)
				out[i].Required = d == ""
				out[i].HasDefault = isDefaultOp(v.Name)
				out[i].Default = ""
				if out[i].HasDefault {
					out[i].Default = d
				}
			}
			for _, a := range v.Args {
				visit(a, true)
			}
		}
	}
	visit(tree.Root, false)
	return out, nil
}

// Process substitutes the variables of text with values from lookup. When required variables
// have no value it returns a *MissingError with all of them and no output. The result is byte for
// byte what clusterctl produces for the same text and values.
func Process(text []byte, lookup Lookup) ([]byte, error) {
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	// No shortcut for text without `${`: envsubst also turns `$$` into `$` everywhere.
	s := Normalize(string(text))
	tree, err := parseTree(s)
	if err != nil {
		return nil, err
	}

	// clusterctl's rule for expressions outside defaults: the first occurrence's default text
	// decides whether an unset variable is missing.
	firstDefault := map[string]string{}
	var order []string
	topLevel(tree.Root, func(n *parse.FuncNode) {
		if _, ok := firstDefault[n.Param]; !ok {
			firstDefault[n.Param] = defaultText(n)
			order = append(order, n.Param)
		}
	})
	missing := map[string]bool{}
	for _, name := range order {
		if _, ok := lookup(name); !ok && firstDefault[name] == "" {
			missing[name] = true
		}
	}
	// Beyond clusterctl: a nested variable whose value is actually needed (the enclosing default
	// is used) and that has no value and no default anywhere is missing too.
	var needed func(n parse.Node)
	needed = func(n parse.Node) {
		switch v := n.(type) {
		case *parse.ListNode:
			for _, c := range v.Nodes {
				needed(c)
			}
		case *parse.FuncNode:
			val, ok := lookup(v.Param)
			if !ok && defaultText(v) == "" && firstDefault[v.Param] == "" {
				missing[v.Param] = true
			}
			if isDefaultOp(v.Name) && ok && val != "" {
				return // the default is not used
			}
			for _, a := range v.Args {
				needed(a)
			}
		}
	}
	topLevel(tree.Root, func(n *parse.FuncNode) {
		val, ok := lookup(n.Param)
		if isDefaultOp(n.Name) && ok && val != "" {
			return
		}
		for _, a := range n.Args {
			needed(a)
		}
	})
	if len(missing) > 0 {
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, &MissingError{Names: names}
	}

	out, err := execute(s, func(name string) string {
		v, _ := lookup(name)
		return v
	})
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// execute runs envsubst, turning a panic of the library (never seen, but it is third-party code
// running on user input) into an error.
func execute(s string, mapping func(string) string) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &ParseError{Err: fmt.Errorf("substitution failure: %v", r)}
		}
	}()
	out, err = envsubst.Eval(s, mapping)
	if err != nil {
		return "", &ParseError{Err: err}
	}
	return out, nil
}

// FromConfig looks variables up with clusterctl's precedence: values set on cfg by capctl, then the
// process environment (empty counts as set), then top-level keys of the config file.
func FromConfig(cfg *config.Config) Lookup {
	if cfg == nil {
		return func(string) (string, bool) { return "", false }
	}
	return cfg.Lookup
}

// FromMap looks variables up in m.
func FromMap(m map[string]string) Lookup {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// Chain looks a variable up in each lookup in turn; the first that has it wins.
func Chain(lookups ...Lookup) Lookup {
	return func(name string) (string, bool) {
		for _, l := range lookups {
			if l == nil {
				continue
			}
			if v, ok := l(name); ok {
				return v, true
			}
		}
		return "", false
	}
}
