package userinput

import (
	"fmt"
	"regexp"
	"strconv"

	"sigs.k8s.io/yaml"
)

// DuplicateKeyError is a mapping that gives the same key twice. YAML parsers disagree on which
// value wins (most keep the last silently), so capctl refuses to guess.
type DuplicateKeyError struct {
	Line int // 1-based, in the text given to YAMLToJSON
	Key  string
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("line %d: key %q is given twice in the same mapping; keep one", e.Line, e.Key)
}

var dupRE = regexp.MustCompile(`line (\d+): key "((?:[^"\\]|\\.)*)" already set in map`)

// YAMLToJSON converts one YAML document to JSON like sigs.k8s.io/yaml (the API machinery's
// reading), but a duplicate key is an error (a *DuplicateKeyError naming its line) instead of
// being resolved silently.
func YAMLToJSON(text []byte) ([]byte, error) {
	j, err := yaml.YAMLToJSONStrict(text)
	if err == nil {
		return j, nil
	}
	if m := dupRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return nil, &DuplicateKeyError{Line: n, Key: m[2]}
	}
	return nil, err
}

// Unmarshal decodes one YAML document into v (through JSON, like sigs.k8s.io/yaml.Unmarshal),
// refusing duplicate keys.
func Unmarshal(text []byte, v any) error {
	j, err := YAMLToJSON(text)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(j, v)
}
