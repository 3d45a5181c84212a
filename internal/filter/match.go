package filter

import (
	"encoding/json"
	"strings"
)

type opKind uint8

const (
	opEq opKind = iota
	opNe
	opIn
	opNin
	opGt
	opGte
	opLt
	opLte
	opExists
	opPrefix
)

// holds reports whether c, a value compared with the operand, passes $gt,
// $gte, $lt or $lte.
func (k opKind) holds(c int) bool {
	switch k {
	case opGt:
		return c > 0
	case opGte:
		return c >= 0
	case opLt:
		return c < 0
	}
	return c <= 0
}

var opNames = [...]string{"$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists", "$prefix"}

// An op is one operator with its operand.
type op struct {
	kind opKind
	arg  any      // the operand as written, in a document's form
	val  value    // $eq, $ne, $gt, $gte, $lt, $lte, $prefix; $exists: a bool
	list []value  // $in, $nin: the values
	in   valueSet // $in, $nin: the values by kind
	// $in, $nin: the arrays and objects among the values, which a document's
	// arrays and objects are compared with one by one.
	comps []value
}

// A value is an operand, with its number parsed once.
type value struct {
	v   any
	num decimal // when v is a json.Number
	key string  // when v is an array or object: its canonical key
}

func newValue(v any) value {
	x := value{v: v}
	switch n := v.(type) {
	case json.Number:
		x.num, _ = parseDecimal(string(n)) // valid: encoding/json read it
	case []any, map[string]any:
		x.key = canonical(v)
	}
	return x
}

// equal reports whether the document's value doc equals x.
func (x *value) equal(doc any) bool {
	switch lit := x.v.(type) {
	case string:
		s, ok := doc.(string)
		return ok && s == lit
	case json.Number:
		d, ok := number(doc)
		return ok && compare(d, x.num) == 0
	}
	return equal(doc, x.v)
}

// order compares the document's value doc with x, a number or string
// operand: ok is false when doc is not of the same kind.
func (x *value) order(doc any) (c int, ok bool) {
	if s, isStr := x.v.(string); isStr {
		d, ok := doc.(string)
		return strings.Compare(d, s), ok
	}
	d, ok := number(doc)
	return compare(d, x.num), ok
}

// equal reports whether a document's value a equals lit, a value of the
// filter; its recursion is bounded by lit's depth.
func equal(a, lit any) bool {
	switch b := lit.(type) {
	case nil:
		return a == nil
	case bool:
		x, ok := a.(bool)
		return ok && x == b
	case string:
		x, ok := a.(string)
		return ok && x == b
	case json.Number:
		x, ok := number(a)
		y, ok2 := parseDecimal(string(b))
		return ok && ok2 && compare(x, y) == 0
	case []any:
		x, ok := a.([]any)
		if !ok || len(x) != len(b) {
			return false
		}
		for i := range b {
			if !equal(x[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		x, ok := a.(map[string]any)
		if !ok || len(x) != len(b) {
			return false
		}
		for k, bv := range b {
			if av, ok := x[k]; !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	}
	return false
}

func (f *Filter) match(d *Doc, v any) bool {
	for i := range f.clauses {
		if !f.clauses[i].match(d, v) {
			return false
		}
	}
	return true
}

func (c *clause) match(d *Doc, doc any) bool {
	switch c.kind {
	case clauseAnd:
		for _, f := range c.subs {
			if !f.match(d, doc) {
				return false
			}
		}
		return true
	case clauseOr:
		for _, f := range c.subs {
			if f.match(d, doc) {
				return true
			}
		}
		return false
	}
	v, ok := resolve(doc, c.path)
	for i := range c.ops {
		if !c.ops[i].match(d, v, ok) {
			return false
		}
	}
	return true
}

// match reports whether the value at the path, v, passes the operator; ok
// is false when there is no value at the path.
func (o *op) match(d *Doc, v any, ok bool) bool {
	switch o.kind {
	case opExists:
		return ok == o.val.v.(bool)
	case opNe, opNin:
		return !ok || !o.any(d, v)
	}
	return ok && o.any(d, v)
}

// any reports whether v or, when v is an array, one of its elements passes
// the test of $eq, $in, $gt, $gte, $lt, $lte or $prefix ($ne and $nin
// test as $eq and $in). A large array is scanned once, then looked up in
// its index.
func (o *op) any(d *Doc, v any) bool {
	if o.test(v) {
		return true
	}
	arr, ok := v.([]any)
	if !ok {
		return false
	}
	// Arrays and objects compared with each element of a scan would cost up
	// to their size each time: the index compares canonical keys.
	if x := d.index(arr, o.val.key != "" || len(o.comps) > 0); x != nil {
		switch o.kind {
		case opEq, opNe:
			return x.has(&o.val)
		case opIn, opNin:
			for i := range o.list {
				if x.has(&o.list[i]) {
					return true
				}
			}
			return false
		}
		return x.passes(o)
	}
	for _, e := range arr {
		if o.test(e) {
			return true
		}
	}
	return false
}

func (o *op) test(v any) bool {
	switch o.kind {
	case opEq, opNe:
		return o.val.equal(v)
	case opIn, opNin:
		switch v.(type) {
		case []any, map[string]any:
			for i := range o.comps {
				if equal(v, o.comps[i].v) {
					return true
				}
			}
			return false
		}
		return o.in.contains(v)
	case opGt, opGte, opLt, opLte:
		c, ok := o.val.order(v)
		return ok && o.kind.holds(c)
	case opPrefix:
		s, ok := v.(string)
		return ok && strings.HasPrefix(s, o.val.v.(string))
	}
	return false
}
