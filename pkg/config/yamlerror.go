package config

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// yamlLine matches the "line N: " part of a YAML parser message.
var yamlLine = regexp.MustCompile(`line \d+: `)

// maxLocateLines bounds the prefix search of locateYAMLError (clusterctl.yaml files are short).
const maxLocateLines = 5000

// locateYAMLError finds the line of a YAML syntax error. The parser reports the line where the
// enclosing block started ("line 1" for a bad indent on line 4 of a mapping that starts on line
// 1), so the line is found instead as the first one after which the text stops parsing with the
// same complaint. It returns the 1-based line, the parser's complaint without its line, and false
// when the text parses or the line cannot be told.
func locateYAMLError(data []byte) (int, string, bool) {
	_, full := yaml.YAMLToJSON(data)
	if full == nil {
		return 0, "", false
	}
	complaint := yamlComplaint(full)
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxLocateLines {
		return 0, complaint, false
	}
	var prefix []byte
	for i, l := range lines {
		prefix = append(prefix, l...)
		if _, err := yaml.YAMLToJSON(prefix); err != nil && yamlComplaint(err) == complaint {
			return i + 1, complaint, true
		}
	}
	return 0, complaint, false
}

// yamlComplaint is a parser error's message without the library prefixes and the line.
func yamlComplaint(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "yaml: "); i >= 0 {
		msg = msg[i+len("yaml: "):]
	}
	return yamlLine.ReplaceAllString(msg, "")
}

// describeYAMLError says where data fails to parse: "line 4: did not find expected '-' indicator
// (   url: https://...)". ok is false when the line cannot be told.
func describeYAMLError(data []byte) (string, bool) {
	n, complaint, ok := locateYAMLError(data)
	if !ok {
		return "", false
	}
	text := strings.TrimRight(string(bytes.SplitAfter(data, []byte("\n"))[n-1]), "\r\n")
	if len(text) > 120 {
		text = text[:120] + "..."
	}
	return fmt.Sprintf("line %d: %s: %q", n, complaint, text), true
}

// decodeProblem matches one problem of a decoding error of the config's structured keys.
var decodeProblem = regexp.MustCompile(`'([^']*)' (?:expected type '([^']*)', got unconvertible type '([^']*)'|expected a map or struct, got "([^"]*)"|expected a map, got '([^']*)')`)

// describeDecodeError restates a decoding error of key in the file's terms: "providers[0].type
// must be a string, not a list". Problems it does not recognise are kept as they are.
func describeDecodeError(key string, err error) string {
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "decoding failed") {
			continue
		}
		m := decodeProblem.FindStringSubmatch(line)
		if m == nil {
			out = append(out, line)
			continue
		}
		want, got := KindOfGoType(m[2]), KindOfGoType(m[3])
		if m[2] == "" {
			want, got = "a mapping", KindOfGoType(m[4]+m[5])
		}
		out = append(out, fmt.Sprintf("%s must be %s, not %s", fieldPath(key, m[1]), want, got))
	}
	return strings.Join(out, "; ")
}

// fieldPath turns a decoder path ("[0].type", "[all].Tag") into one under key
// ("providers[0].type", "images.all.tag").
func fieldPath(key, p string) string {
	var b strings.Builder
	b.WriteString(key)
	for len(p) > 0 {
		switch p[0] {
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				b.WriteString(p)
				return b.String()
			}
			seg := p[1:end]
			if strings.Trim(seg, "0123456789") == "" {
				b.WriteString("[" + seg + "]")
			} else {
				b.WriteString("." + seg)
			}
			p = p[end+1:]
		case '.':
			p = p[1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			seg := p[:end]
			b.WriteString("." + strings.ToLower(seg[:1]) + seg[1:])
			p = p[end:]
		}
	}
	return b.String()
}

// KindOfGoType names a Go type (as reflect or a decoder prints it) by the kind of YAML value it
// holds, for errors that must not show Go types: "a string", "a whole number", "a list", ...
func KindOfGoType(t string) string {
	switch {
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "[]") || strings.HasPrefix(t, "["):
		return "a list"
	}
	return "a mapping"
}
