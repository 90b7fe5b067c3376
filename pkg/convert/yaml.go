package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	yaml "go.yaml.in/yaml/v3"
)

// render writes a converted object as one YAML document, taking from the input document's node
// tree (when given) the key order, comments and scalar styles of every field that kept its path.
// Fields new to the object follow the kept ones in sorted order.
func render(obj map[string]any, input *yaml.Node, compactSeq bool) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.DocumentNode}
	var content *yaml.Node
	if input != nil && input.Kind == yaml.DocumentNode {
		doc.HeadComment, doc.LineComment, doc.FootComment = input.HeadComment, input.LineComment, input.FootComment
		if len(input.Content) == 1 {
			content = input.Content[0]
		}
	}
	doc.Content = []*yaml.Node{buildNode(obj, content)}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if compactSeq {
		enc.CompactSeqIndent()
	}
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func buildNode(v any, in *yaml.Node) *yaml.Node {
	if in != nil && in.Kind == yaml.AliasNode {
		in = in.Alias
	}
	switch t := v.(type) {
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		inKeys := map[string]int{}
		var order []string
		if in != nil && in.Kind == yaml.MappingNode {
			copyComments(n, in)
			for i := 0; i+1 < len(in.Content); i += 2 {
				k := in.Content[i].Value
				if _, ok := t[k]; ok {
					if _, dup := inKeys[k]; !dup {
						order = append(order, k)
					}
					inKeys[k] = i
				}
			}
		}
		var rest []string
		for k := range t {
			if _, ok := inKeys[k]; !ok {
				rest = append(rest, k)
			}
		}
		sort.Strings(rest)
		for _, k := range append(order, rest...) {
			kn := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}
			var vin *yaml.Node
			if i, ok := inKeys[k]; ok {
				copyComments(kn, in.Content[i])
				kn.Style = in.Content[i].Style
				vin = in.Content[i+1]
			}
			n.Content = append(n.Content, kn, buildNode(t[k], vin))
		}
		if len(t) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if in != nil && in.Kind == yaml.SequenceNode {
			copyComments(n, in)
			if in.Style == yaml.FlowStyle {
				n.Style = yaml.FlowStyle
			}
		}
		for i, e := range t {
			var ein *yaml.Node
			if in != nil && in.Kind == yaml.SequenceNode && i < len(in.Content) {
				ein = in.Content[i]
			}
			n.Content = append(n.Content, buildNode(e, ein))
		}
		if len(t) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	default:
		if in != nil && in.Kind == yaml.ScalarNode && sameScalar(in, v) {
			c := *in
			return &c
		}
		n := scalarNode(v)
		if in != nil {
			copyComments(n, in)
		}
		return n
	}
}

func copyComments(dst, src *yaml.Node) {
	dst.HeadComment, dst.LineComment, dst.FootComment = src.HeadComment, src.LineComment, src.FootComment
}

func scalarNode(v any) *yaml.Node {
	switch t := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case bool:
		s := "false"
		if t {
			s = "true"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: s}
	case json.Number:
		tag := "!!int"
		if _, err := t.Int64(); err != nil {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}
	default:
		n := &yaml.Node{}
		if err := n.Encode(t); err != nil {
			// Written whole as JSON text: a value is never cut short in the output.
			b, jerr := json.Marshal(t)
			if jerr != nil {
				b = []byte(fmt.Sprint(t))
			}
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(b)}
		}
		return n
	}
}

// sameScalar reports whether the input scalar node decodes to v.
func sameScalar(in *yaml.Node, v any) bool {
	var x any
	if err := in.Decode(&x); err != nil {
		return false
	}
	a, err1 := json.Marshal(x)
	b, err2 := json.Marshal(v)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

var (
	seqLineRE = regexp.MustCompile(`^( *)- `)
	keyLineRE = regexp.MustCompile(`^( *)[^ #-][^:]*:\s*$`)
)

// compactSequences tells whether a document writes list items at their key's indentation
// ("key:\n- a", kubectl's style, the default) rather than indented below it.
func compactSequences(text []byte) bool {
	lines := bytes.Split(text, []byte("\n"))
	for i := 1; i < len(lines); i++ {
		m := seqLineRE.FindSubmatch(lines[i])
		if m == nil {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			if len(bytes.TrimSpace(lines[j])) == 0 {
				continue
			}
			if k := keyLineRE.FindSubmatch(lines[j]); k != nil {
				return len(m[1]) <= len(k[1])
			}
			break
		}
	}
	return true
}
