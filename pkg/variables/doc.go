// Package variables is capctl's variable engine for provider components and cluster templates.
//
// It substitutes `${...}` expressions with exactly the grammar clusterctl v1.14 accepts, by using
// the same library (github.com/drone/envsubst/v2, same revision) after the same pre-normalisation
// of the legacy whitespace forms `${ VAR }`, `${ VAR}` and `${VAR }`. On the same text and the same
// values, Process produces byte for byte what clusterctl's template processor produces.
//
// The API:
//
//   - List(text) returns the variables a document uses, in order of first appearance, with their
//     defaults; variables nested inside another's default (`${A:=${B}}`) are listed too (B, marked
//     Nested), which clusterctl does not do.
//   - Process(text, lookup) substitutes the variables; when required variables have no value it
//     returns a *MissingError naming all of them, sorted, and no output.
//   - Lookup adapters: FromConfig (clusterctl precedence: capctl-set, env, config file), FromMap,
//     Chain (first hit wins), so callers can layer --set flags or a values file on top.
//
// Grammar, as drone/envsubst parses it (see clusterctl-spec §4.1):
//
//   - `${VAR}` is a variable. `$VAR` (no braces) is left as it is, and so is `$$NAME`.
//   - `$${VAR}` is an escape: it yields the literal text `${VAR}`.
//   - `${VAR:=d}`, `${VAR=d}`, `${VAR:-d}` (also `:?`, `:+`) use d when VAR is unset or empty.
//     `${VAR-d}` is a parse error ("missing closing brace"), as in clusterctl.
//   - Defaults may nest: `${A:=${B:=c}}`; quotes in defaults are kept: `${A:="x"}` yields `"x"`.
//   - String functions: `${#v}`, `${v^}`, `${v^^}`, `${v,}`, `${v,,}`, `${v:off}`, `${v:off:len}`,
//     `${v#p}`, `${v##p}`, `${v%p}`, `${v%%p}`, `${v/p/r}`, `${v//p/r}`, `${v/#p/r}`, `${v/%p/r}`.
//   - Substitution works on raw text, before any YAML parsing: expressions inside YAML comments are
//     substituted (and their variables required) too.
//
// Required variables follow clusterctl: a variable is required when its first occurrence outside any
// default has no default text (no default, or an empty one such as `${VAR:=}`). A value that is set
// but empty counts as set. clusterctl builds the default text of a string function from its
// arguments, so `${V:0:3}` or `${V/a/b}` never make V required; capctl keeps that rule so that the
// same templates render.
//
// One deliberate difference: clusterctl never checks variables nested in a default, so
// `${A:=${B}}` with neither A nor B set silently renders an empty string. Process reports B as
// missing in that case (only when the default is actually used, i.e. A is unset or empty, and B has
// no default of its own anywhere). Whenever every variable has a value, the output is identical.
package variables
