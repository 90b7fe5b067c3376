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
