package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// checkYAML walks the document against the shape of Config and returns one
// error per unknown key or value of the wrong kind, each naming the YAML
// path and line (yaml.v3's own messages name Go types and fields, such as
// "field x not found in type config.Checkback" or "into time.Duration").
func checkYAML(doc *yaml.Node) error {
	if doc.Kind == 0 {
		return nil // empty file
	}
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil
		}
		doc = doc.Content[0]
	}
	var errs []error
	checkNode(doc, reflect.TypeFor[Config](), "", &errs)
	return errors.Join(errs...)
}

var durationType = reflect.TypeFor[time.Duration]()

func checkNode(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	bad := func(format string, args ...any) {
		where := path
		if where == "" {
			where = "the file"
		}
		*errs = append(*errs, fmt.Errorf("%s (line %d): %s", where, n.Line, fmt.Sprintf(format, args...)))
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // null leaves the default
	}
	switch {
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			bad("want a mapping of keys, got %s", describe(n))
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				checkNode(v, t, path, errs)
				continue
			}
			child := joinPath(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, fmt.Errorf("%s (line %d): unknown key%s", child, k.Line, known(fields)))
				continue
			}
			checkNode(v, ft, child, errs)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			bad("want a list, got %s", describe(n))
			return
		}
		for i, item := range n.Content {
			checkNode(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			bad("want %s, got %s", want(t), describe(n))
			return
		}
		v := reflect.New(t)
		if err := n.Decode(v.Interface()); err != nil {
			bad("want %s, got %s", want(t), describe(n))
		}
	}
}

// yamlFields maps the YAML keys of struct t to their types, inline
// (embedded) structs included.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func known(fields map[string]reflect.Type) string {
	if len(fields) == 0 {
		return ""
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return " (known keys: " + strings.Join(keys, ", ") + ")"
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// want describes what a leaf of type t accepts, in YAML terms.
func want(t reflect.Type) string {
	if t == durationType {
		return "a duration such as 30s, 5m or 1h30m"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a string"
}

// describe names what a node holds, for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:37] + "..."
	}
	return strconv.Quote(v)
}
