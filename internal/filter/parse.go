package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// where is the place being read or compiled: the keys (".data") and list
// indexes ("[1]") from the filter's top down to it.
type where []string

func (w *where) push(s string) { *w = append(*w, s) }
func (w *where) pop()          { *w = (*w)[:len(*w)-1] }

func (w where) errorf(format string, args ...any) error {
	return &PathError{Path: "filter" + strings.Join(w, ""), Msg: fmt.Sprintf(format, args...)}
}

func sizeMsg(n int, how string) string {
	return fmt.Sprintf("is %d bytes%s, more than the %d allowed", n, how, maxSize)
}

// An object is a JSON object as read: its members in order.
type object []member

type member struct {
	key string
	val any
}

// read reads the filter's JSON into objects, []any and scalars (json.Number
// for numbers), refusing invalid JSON, a key twice in an object, nesting
// deeper than maxDepth, anything but an object at the top and anything after
// it.
func read(raw []byte) (object, error) {
	r := reader{dec: json.NewDecoder(bytes.NewReader(raw))}
	r.dec.UseNumber()
	tok, err := r.dec.Token()
	if err == io.EOF {
		return nil, r.at.errorf("must be a JSON object, got nothing")
	}
	if err != nil {
		return nil, r.syntax(err)
	}
	v, err := r.value(tok, 0)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(object)
	if !ok {
		return nil, r.at.errorf("must be an object, got %s", kind(v))
	}
	if _, err := r.dec.Token(); err != io.EOF {
		return nil, r.at.errorf("invalid JSON: more after the object")
	}
	return obj, nil
}

type reader struct {
	dec *json.Decoder
	at  where
}

func (r *reader) syntax(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.at.errorf("invalid JSON: unexpected end")
	}
	return r.at.errorf("invalid JSON: %v", err)
}

// value reads the value that starts with tok, at the given depth of arrays
// and objects.
func (r *reader) value(tok json.Token, depth int) (any, error) {
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // string, json.Number, bool or nil
	}
	if depth == maxDepth {
		return nil, r.at.errorf("nests deeper than %d arrays and objects", maxDepth)
	}
	var v any
	switch d {
	case '{':
		obj := object{}
		seen := make(map[string]bool)
		for r.dec.More() {
			tok, err := r.dec.Token()
			if err != nil {
				return nil, r.syntax(err)
			}
			key, ok := tok.(string)
			if !ok {
				return nil, r.at.errorf("invalid JSON: a key that is not a string")
			}
			r.at.push("." + key)
			if seen[key] {
				return nil, r.at.errorf("duplicate key")
			}
			seen[key] = true
			if tok, err = r.dec.Token(); err != nil {
				return nil, r.syntax(err)
			}
			val, err := r.value(tok, depth+1)
			if err != nil {
				return nil, err
			}
			r.at.pop()
			obj = append(obj, member{key, val})
		}
		v = obj
	case '[':
		arr := []any{}
		for i := 0; r.dec.More(); i++ {
			r.at.push("[" + strconv.Itoa(i) + "]")
			tok, err := r.dec.Token()
			if err != nil {
				return nil, r.syntax(err)
			}
			val, err := r.value(tok, depth+1)
			if err != nil {
				return nil, err
			}
			r.at.pop()
			arr = append(arr, val)
		}
		v = arr
	default:
		return nil, r.at.errorf("invalid JSON: unexpected %q", rune(d))
	}
	if _, err := r.dec.Token(); err != nil { // the closing delimiter
		return nil, r.syntax(err)
	}
	return v, nil
}

// kind names the JSON type of a value read or decoded.
func kind(v any) string {
	switch v.(type) {
	case object, map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// compiler turns what read returns into a Filter.
type compiler struct {
	at    where
	conds int
}

func (c *compiler) filter(obj object, nesting int) (*Filter, error) {
	f := &Filter{clauses: make([]clause, 0, len(obj))}
	for _, m := range obj {
		c.at.push("." + m.key)
		cl, err := c.clause(m.key, m.val, nesting)
		if err != nil {
			return nil, err
		}
		c.at.pop()
		f.clauses = append(f.clauses, cl)
	}
	return f, nil
}

func (c *compiler) clause(key string, val any, nesting int) (clause, error) {
	cl := clause{key: key}
	if strings.HasPrefix(key, "$") {
		switch key {
		case "$and":
			cl.kind = clauseAnd
		case "$or":
			cl.kind = clauseOr
		default:
			return cl, c.at.errorf(`unknown key; a filter's keys are paths, "$and" and "$or" ` +
				`(operators go under a path, as in {"amount": {"$gt": 10}}; a path that starts with $ is written \$)`)
		}
		list, ok := val.([]any)
		if !ok || len(list) == 0 {
			return cl, c.at.errorf("must be a non-empty list of filters, got %s", kindOrEmpty(val))
		}
		if nesting == maxNesting {
			return cl, c.at.errorf("$and and $or nest more than %d deep", maxNesting)
		}
		for i, v := range list {
			c.at.push("[" + strconv.Itoa(i) + "]")
			obj, ok := v.(object)
			if !ok {
				return cl, c.at.errorf("must be a filter (an object), got %s", kind(v))
			}
			sub, err := c.filter(obj, nesting+1)
			if err != nil {
				return cl, err
			}
			c.at.pop()
			cl.subs = append(cl.subs, sub)
		}
		return cl, nil
	}
	path, err := splitPath(key)
	if err != nil {
		return cl, c.at.errorf("%v", err)
	}
	cl.path = path
	ops, ok := val.(object)
	if !ok {
		o, err := c.op(opEq, val)
		cl.lit, cl.ops = true, []op{o}
		return cl, err
	}
	if len(ops) == 0 {
		return cl, c.at.errorf("must hold operators (%s), got an empty object", strings.Join(opNames[:], ", "))
	}
	for _, m := range ops {
		c.at.push("." + m.key)
		k := opKind(0)
		for k < opKind(len(opNames)) && opNames[k] != m.key {
			k++
		}
		switch {
		case k < opKind(len(opNames)):
		case strings.HasPrefix(m.key, "$"):
			return cl, c.at.errorf("unknown operator %s; the operators are %s", m.key, strings.Join(opNames[:], ", "))
		default:
			return cl, c.at.errorf(`not an operator; an object under a path holds operators (%s): `+
				`write a nested field in the path (%q), or compare a whole object with {"$eq": {…}}`,
				strings.Join(opNames[:], ", "), key+"."+m.key)
		}
		o, err := c.op(k, m.val)
		if err != nil {
			return cl, err
		}
		c.at.pop()
		cl.ops = append(cl.ops, o)
	}
	return cl, nil
}

func kindOrEmpty(v any) string {
	if l, ok := v.([]any); ok && len(l) == 0 {
		return "an empty one"
	}
	return kind(v)
}

// op checks an operator's operand and counts the condition.
func (c *compiler) op(k opKind, arg any) (op, error) {
	if c.conds++; c.conds > maxConditions {
		return op{}, c.at.errorf("more than %d conditions (bare values and operators) in the filter", maxConditions)
	}
	o := op{kind: k, arg: literal(arg)}
	switch k {
	case opEq, opNe:
		o.val = newValue(o.arg)
	case opIn, opNin:
		list, ok := o.arg.([]any)
		if !ok {
			return o, c.at.errorf("must be a list of values, got %s", kind(arg))
		}
		o.in.add(list)
		for _, v := range list {
			x := newValue(v)
			o.list = append(o.list, x)
			if x.key != "" {
				o.comps = append(o.comps, x)
			}
		}
	case opGt, opGte, opLt, opLte:
		switch arg.(type) {
		case string, json.Number:
			o.val = newValue(arg)
		default:
			return o, c.at.errorf("must be a number or string, got %s", kind(arg))
		}
	case opExists:
		b, ok := arg.(bool)
		if !ok {
			return o, c.at.errorf("must be true or false, got %s", kind(arg))
		}
		o.val.v = b
	case opPrefix:
		if _, ok := arg.(string); !ok {
			return o, c.at.errorf("must be a string, got %s", kind(arg))
		}
		o.val = newValue(arg)
	}
	return o, nil
}

// literal turns what read returns into a document's form: objects into
// maps. Its depth is bounded by maxDepth.
func literal(v any) any {
	switch v := v.(type) {
	case object:
		m := make(map[string]any, len(v))
		for _, x := range v {
			m[x.key] = literal(x.val)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, x := range v {
			l[i] = literal(x)
		}
		return l
	}
	return v
}
