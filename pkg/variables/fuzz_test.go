package variables

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"a: ${X}\n",
	"${A:=${B:=c}}",
	`${SERVICE_DOMAIN:="cluster.local"}`,
	"$${X} $$NAME $NAME $ $$$",
	"# ${IN_COMMENT}\nkind: Pod",
	"${ X } ${X } ${ X}",
	"${X:1:2} ${#X} ${X^^} ${X,,} ${X#a} ${X##a} ${X%a} ${X%%a} ${X/a/b} ${X//a/b} ${X/#a/b} ${X/%a/b}",
	"${X-d}",
	"${",
	"}",
	"plain text without dollars",
}

// FuzzProcess checks properties of Process on any input: it never panics; text without `$` is
// returned unchanged (NUL bytes are refused); with every listed variable set it never reports missing variables and
// agrees with clusterctl's pipeline byte for byte; errors are either parse errors or MissingError.
func FuzzProcess(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "value")
	}
	f.Fuzz(func(t *testing.T, text, value string) {
		out, err := Process([]byte(text), nil)
		var me *MissingError
		var pe *ParseError
		if err != nil && !errors.As(err, &me) && !errors.As(err, &pe) {
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
		if me != nil && len(me.Names) == 0 {
			t.Fatal("MissingError without names")
		}
		if !strings.ContainsAny(text, "$\x00") && (err != nil || !bytes.Equal(out, []byte(text))) {
			t.Fatalf("text without $ changed: %q -> %q, %v", text, out, err)
		}
		vars, lerr := List([]byte(text))
		if (lerr == nil) != (pe == nil) {
			t.Fatalf("List and Process disagree on parsing: %v vs %v", lerr, err)
		}
		if lerr != nil {
			return
		}
		all := map[string]string{}
		for _, v := range vars {
			all[v.Name] = value
		}
		out, err = Process([]byte(text), FromMap(all))
		if errors.As(err, &me) {
			t.Fatalf("every variable set, still missing %v", me.Names)
		}
		if err != nil {
			t.Fatalf("every variable set: %v", err)
		}
		if ref := clusterctlReference(t, text, FromMap(all)); ref != string(out) {
			t.Fatalf("differs from clusterctl: %q vs %q", out, ref)
		}
	})
}

// FuzzList checks that List never panics, lists each name once, never an empty name, and that a
// variable reported required is indeed reported missing by Process when nothing is set, unless
// it is nested (needed only when the enclosing default is used).
func FuzzList(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		vars, err := List([]byte(text))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, v := range vars {
			if v.Name == "" || seen[v.Name] {
				t.Fatalf("bad or duplicate name %q in %+v", v.Name, vars)
			}
			seen[v.Name] = true
			if v.Default != "" && !v.HasDefault {
				t.Fatalf("default without operator: %+v", v)
			}
		}
		_, perr := Process([]byte(text), nil)
		missing := map[string]bool{}
		var me *MissingError
		if errors.As(perr, &me) {
			for _, n := range me.Names {
				missing[n] = true
				if !seen[n] {
					t.Fatalf("Process reports %s missing, List does not know it", n)
				}
			}
		}
		for _, v := range vars {
			if v.Required && !v.Nested && !missing[v.Name] {
				t.Fatalf("%s required but not reported missing (%v)", v.Name, perr)
			}
			if !v.Required && missing[v.Name] && !v.Nested {
				t.Fatalf("%s optional but reported missing", v.Name)
			}
		}
	})
}
