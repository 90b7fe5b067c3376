package variables

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/drone/envsubst/v2"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/config"
)

var values = map[string]string{
	"X":     "abcab",
	"NAME":  "n",
	"EMPTY": "",
	"B":     "bee",
	"PATH_": "a/b/c",
	"LOWER": "hello world",
}

func TestProcessGrammar(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"plain", "a: ${X}\n", "a: abcab\n"},
		{"default colon-equals used", "a: ${UNSET:=d}", "a: d"},
		{"default equals used", "a: ${UNSET=d}", "a: d"},
		{"default colon-minus used", "a: ${UNSET:-d}", "a: d"},
		{"default ignored when set", "a: ${X:=d}", "a: abcab"},
		{"set-but-empty takes the default", "a: ${EMPTY:=d}", "a: d"},
		{"set-but-empty is set", "a: '${EMPTY}'", "a: ''"},
		{"quoted default keeps quotes", `a: ${UNSET:="cluster.local"}`, `a: "cluster.local"`},
		{"json-like default", `a: ${UNSET:=["192.168.0.0/16"]}`, `a: ["192.168.0.0/16"]`},
		{"nested default", "a: ${UNSET:=${B}}", "a: bee"},
		{"nested default twice", "a: ${UNSET:=${UNSET2:=c}}", "a: c"},
		{"nested default not used", "a: ${X:=${UNSET}}", "a: abcab"},
		{"text around nested default", "a: ${UNSET:=pre-${B}-post}", "a: pre-bee-post"},
		{"escape", "a: $${X}", "a: ${X}"},
		{"escape of default", "a: $${X:=d}", "a: ${X:=d}"},
		{"double dollar before name", "a: $$NAME", "a: $NAME"},
		{"triple dollar then brace", "a: $$${X}", "a: $abcab"},
		{"bare dollar name kept", "run: echo $NAME $HOME", "run: echo $NAME $HOME"},
		{"lone dollars kept", "a: $ b$ $", "a: $ b$ $"},
		{"expression in a comment", "# uses ${X}\na: 1", "# uses abcab\na: 1"},
		{"legacy blanks both", "a: ${ X }", "a: abcab"},
		{"legacy blank left", "a: ${ X}", "a: abcab"},
		{"legacy blank right", "a: ${X }", "a: abcab"},
		{"legacy tab and newline", "a: ${\tX\n}", "a: abcab"},
		{"substring offset", "a: ${X:1}", "a: bcab"},
		{"substring offset length", "a: ${X:1:2}", "a: bc"},
		{"substring negative offset", "a: ${X:-2}", "a: abcab"}, // `:-` is a default, as in clusterctl
		{"length", "a: ${#X}", "a: 5"},
		{"upper first", "a: ${LOWER^}", "a: Hello world"},
		{"upper all", "a: ${LOWER^^}", "a: HELLO WORLD"},
		{"lower first", "a: ${NAME,}", "a: n"},
		{"lower all", "a: ${X,,}", "a: abcab"},
		{"shortest prefix", "a: ${X#a*}", "a: bcab"},
		{"longest prefix", "a: ${X##a*}", "a: "},
		{"shortest suffix", "a: ${X%a*}", "a: abc"},
		{"longest suffix", "a: ${X%%a*}", "a: "},
		{"replace first", "a: ${X/ab/Z}", "a: Zcab"},
		{"replace all", "a: ${X//ab/Z}", "a: ZcZ"},
		{"replace prefix", "a: ${X/#ab/Z}", "a: Zcab"},
		{"replace suffix", "a: ${X/%ab/Z}", "a: abcZ"},
		{"replace with slash escaped", `a: ${PATH_//\//-}`, "a: a-b-c"},
		{"delete", "a: ${X//a/}", "a: bcb"},
		{"no dollar", "a: b\n# c: d\n", "a: b\n# c: d\n"},
		{"unicode", "ä: ${X}ö", "ä: abcabö"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Process([]byte(c.in), FromMap(values))
			if err != nil {
				t.Fatalf("Process(%q): %v", c.in, err)
			}
			if string(got) != c.want {
				t.Errorf("Process(%q) = %q, want %q", c.in, got, c.want)
			}
			if ref := clusterctlReference(t, c.in, FromMap(values)); ref != string(got) {
				t.Errorf("Process(%q) = %q, clusterctl's pipeline gives %q", c.in, got, ref)
			}
		})
	}
}

func TestProcessMissingAllAtOnceSorted(t *testing.T) {
	in := "a: ${ZED}\nb: ${ALPHA}\nc: ${ZED}\nd: ${OK:=x}\ne: ${REQ_EMPTY:=}\n# f: ${IN_COMMENT}\ng: ${X}\n"
	out, err := Process([]byte(in), FromMap(values))
	var me *MissingError
	if !errors.As(err, &me) {
		t.Fatalf("want *MissingError, got %v (output %q)", err, out)
	}
	want := []string{"ALPHA", "IN_COMMENT", "REQ_EMPTY", "ZED"}
	if !reflect.DeepEqual(me.Names, want) {
		t.Errorf("missing = %v, want %v", me.Names, want)
	}
	if out != nil {
		t.Errorf("output on error: %q", out)
	}
	if msg := err.Error(); msg != "value for variables [ALPHA, IN_COMMENT, REQ_EMPTY, ZED] is not set. Please set the value using os environment variables or the clusterctl config file" {
		t.Errorf("message = %q", msg)
	}
}

func TestProcessMissingFollowsClusterctlFirstOccurrence(t *testing.T) {
	// The first occurrence decides: a later default does not rescue an earlier bare use...
	_, err := Process([]byte("${A}\n${A:=x}\n"), nil)
	var me *MissingError
	if !errors.As(err, &me) || !reflect.DeepEqual(me.Names, []string{"A"}) {
		t.Fatalf("want A missing, got %v", err)
	}
	// ...and an earlier default covers a later bare use (which renders empty, as in clusterctl).
	out, err := Process([]byte("${A:=x}\n${A}\n"), nil)
	if err != nil || string(out) != "x\n\n" {
		t.Fatalf("got %q, %v", out, err)
	}
	// String functions build a default text, so they never make a variable required.
	out, err = Process([]byte("${V:0:3}|${W/a/b}|${#L}"), FromMap(map[string]string{"L": "abc"}))
	if err != nil || string(out) != "||3" {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestProcessNestedMissingOnlyWhenNeeded(t *testing.T) {
	in := []byte("a: ${A:=${B}}\n")
	if _, err := Process(in, FromMap(map[string]string{"A": "set"})); err != nil {
		t.Errorf("A set, B not needed: %v", err)
	}
	if out, err := Process(in, FromMap(map[string]string{"B": "b"})); err != nil || string(out) != "a: b\n" {
		t.Errorf("B set: %q, %v", out, err)
	}
	_, err := Process(in, nil)
	var me *MissingError
	if !errors.As(err, &me) || !reflect.DeepEqual(me.Names, []string{"B"}) {
		t.Errorf("neither set: want B missing (clusterctl renders empty), got %v", err)
	}
	// A default for B anywhere in the document outside defaults satisfies it.
	if out, err := Process([]byte("a: ${A:=${B}}\nb: ${B:=bb}\n"), nil); err != nil || string(out) != "a: \nb: bb\n" {
		t.Errorf("B has a default elsewhere: %q, %v", out, err)
	}
}

func TestProcessParseErrors(t *testing.T) {
	for _, in := range []string{"${X-d}", "${}", "${ X:=d}", "${X//a}", "${X", "a: ${X:=${Y}", "${X^x}"} {
		_, err := Process([]byte(in), FromMap(values))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Process(%q): want *ParseError, got %v", in, err)
		}
		if _, err := List([]byte(in)); !errors.As(err, &pe) {
			t.Errorf("List(%q): want *ParseError, got %v", in, err)
		}
	}
}

func TestList(t *testing.T) {
	in := `
a: ${CLUSTER_NAME}
b: ${POD_CIDR:=["192.168.0.0/16"]}
c: ${SERVICE_DOMAIN:="cluster.local"}
d: ${EMPTY_DEFAULT:=}
e: ${OUTER:=${INNER}-${INNER2:=x}}
f: ${CLUSTER_NAME:=late-default-ignored}
g: $${ESCAPED} $BARE $$DOUBLE
# h: ${IN_COMMENT:-c}
i: ${SUB:1:2}
j: ${INNER:=now-top}
`
	got, err := List([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Variable{
		{Name: "CLUSTER_NAME", Required: true},
		{Name: "POD_CIDR", Default: `["192.168.0.0/16"]`, HasDefault: true},
		{Name: "SERVICE_DOMAIN", Default: `"cluster.local"`, HasDefault: true},
		{Name: "EMPTY_DEFAULT", HasDefault: true, Required: true},
		{Name: "OUTER", Default: "${INNER}-${INNER2}", HasDefault: true},
		{Name: "INNER", Default: "now-top", HasDefault: true},
		{Name: "INNER2", Default: "x", HasDefault: true, Nested: true},
		{Name: "IN_COMMENT", Default: "c", HasDefault: true},
		{Name: "SUB"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List:\n got %+v\nwant %+v", got, want)
	}
	if vs, err := List([]byte("no variables: $HOME")); err != nil || len(vs) != 0 {
		t.Errorf("List without variables = %v, %v", vs, err)
	}
}

// TestFixtureTemplatesByteForByte processes every template of the fixture repository with every
// variable set and compares with clusterctl's pipeline, byte for byte, on whole files.
func TestFixtureTemplatesByteForByte(t *testing.T) {
	dir := testenv.FixturesDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "repository", "infrastructure-docker", "*", "cluster*.yaml"))
	if len(files) == 0 {
		t.Fatal("no templates in the fixture repository")
	}
	set := map[string]string{
		"CLUSTER_NAME": "c1", "NAMESPACE": "ns1", "KUBERNETES_VERSION": "v1.34.1",
		"CONTROL_PLANE_MACHINE_COUNT": "3", "WORKER_MACHINE_COUNT": "2", "SERVICE_DOMAIN": `"example.org"`,
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)
		vars, err := List(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, v := range vars {
			if v.Required {
				if _, ok := set[v.Name]; !ok {
					t.Errorf("%s: unexpected required variable %s", name, v.Name)
				}
			}
		}
		got, err := Process(raw, FromMap(set))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ref := clusterctlReference(t, string(raw), FromMap(set)); ref != string(got) {
			t.Errorf("%s differs from clusterctl's pipeline", name)
		}
		if strings.Contains(string(got), "${") {
			t.Errorf("%s: unsubstituted expression left", name)
		}
		if len(vars) > 0 && string(got) == string(raw) {
			t.Errorf("%s: nothing substituted", name)
		}
		// Missing every required variable: all reported at once.
		var required []string
		for _, v := range vars {
			if v.Required {
				required = append(required, v.Name)
			}
		}
		_, err = Process(raw, nil)
		var me *MissingError
		if len(required) > 0 && (!errors.As(err, &me) || len(me.Names) != len(required)) {
			t.Errorf("%s: want %d missing %v, got %v", name, len(required), required, err)
		}
	}
}

func TestLookups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clusterctl.yaml")
	if err := os.WriteFile(path, []byte("FROM_FILE: file\nBOTH: file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(testenv.Context(t), config.Options{Path: path, LookupEnv: FromMap(map[string]string{"BOTH": "env", "ENV_EMPTY": ""})})
	if err != nil {
		t.Fatal(err)
	}
	l := Chain(FromMap(map[string]string{"FLAG": "flag"}), nil, FromConfig(cfg))
	for name, want := range map[string]string{"FLAG": "flag", "BOTH": "env", "FROM_FILE": "file", "ENV_EMPTY": ""} {
		if v, ok := l(name); !ok || v != want {
			t.Errorf("%s = %q, %v; want %q", name, v, ok, want)
		}
	}
	if _, ok := l("NOPE"); ok {
		t.Error("NOPE found")
	}
	if _, ok := FromConfig(nil)("X"); ok {
		t.Error("nil config found a value")
	}
}

// clusterctlLegacyRE is clusterctl's own pattern for the legacy whitespace forms (three
// alternatives, each requiring a blank), kept here to check capctl's single pattern against it.
var clusterctlLegacyRE = regexp.MustCompile(`(\${(\s+([A-Za-z0-9_$]+)\s+)})|(\${(\s+([A-Za-z0-9_$]+))})|(\${(([A-Za-z0-9_$]+)\s+)})`)

// clusterctlReference is clusterctl's processing pipeline (legacy normalisation, then envsubst with
// unset variables as ""), used as the oracle.
func clusterctlReference(t testing.TB, in string, lookup Lookup) string {
	t.Helper()
	s := clusterctlLegacyRE.ReplaceAllStringFunc(in, func(m string) string { return regexp.MustCompile(`\s`).ReplaceAllString(m, "") })
	out, err := envsubst.Eval(s, func(name string) string { v, _ := lookup(name); return v })
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	return out
}
