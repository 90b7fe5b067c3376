package userinput

import (
	"errors"
	"fmt"
	"strings"

	kjson "sigs.k8s.io/json"
)

// StrictKeysError lists the keys of a reviewed file that a strict decoding refused: unknown keys,
// keys given twice, and keys that differ from a known one only in case. encoding/json would take
// the last of two case variants ("gatecommand" beside "gateCommand") silently, so what a reviewer
// read and what runs could differ.
type StrictKeysError struct {
	Problems []string
}

func (e *StrictKeysError) Error() string {
	return "it holds keys capctl does not write: " + strings.Join(e.Problems, "; ") +
		" (keys are case-sensitive and given once; remove or correct them)"
}

// DecodeJSONStrict decodes one JSON document into v the way the API machinery does (sigs.k8s.io/json,
// keys matched case-sensitively), and refuses unknown and duplicate keys (a *StrictKeysError
// naming each) and anything after the document. For files capctl trusts for what it runs or
// writes: plan files, backup manifests.
func DecodeJSONStrict(data []byte, v any) error {
	strict, err := kjson.UnmarshalStrict(data, v)
	if err != nil {
		return err
	}
	if len(strict) == 0 {
		return nil
	}
	e := &StrictKeysError{}
	for _, s := range strict {
		e.Problems = append(e.Problems, s.Error())
	}
	return e
}

// UnmarshalStrict is DecodeJSONStrict for one YAML document (duplicate keys refused with their
// line, as Unmarshal does).
func UnmarshalStrict(text []byte, v any) error {
	j, err := YAMLToJSON(text)
	if err != nil {
		return err
	}
	if err := DecodeJSONStrict(j, v); err != nil {
		var sk *StrictKeysError
		if errors.As(err, &sk) {
			return err
		}
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}
