package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// A Doc is a JSON document, a message's payload, to be matched against many
// filters. Besides the document it holds indexes of its arrays of 16
// elements or more, each built when operators test the array a second time
// (or at once, for an operand that is an array or object), so that matching
// costs about the same whatever the length of the arrays a filter looks
// into. A Doc may be matched by several goroutines at once.
type Doc struct {
	v any

	mu     sync.Mutex
	arrays map[arrayID]*arrayIndex // of the arrays tested so far
	// Arrays of at least indexFrom elements are indexed once scanned
	// scansFirst times; tests change these.
	indexFrom, scansFirst int
}

// Indexing starts with arrays of this many elements, scanned once first.
const (
	indexFrom  = 16
	scansFirst = 1
)

// NewDoc returns the document v, in the form encoding/json's Unmarshal into
// an any gives: map[string]any, []any, string, float64 or json.Number, bool
// and nil. Its float64 numbers hold what float64 can, 53 bits; values of
// other Go types match only $exists and the negations $ne and $nin. v must
// not change while the Doc is in use.
func NewDoc(v any) *Doc { return &Doc{v: v, indexFrom: indexFrom, scansFirst: scansFirst} }

// Decode decodes a JSON document, a message's payload, with its numbers as
// json.Number, so that they compare exactly. Decode a payload once and match
// it against each filter.
func Decode(payload []byte) (*Doc, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("decode payload: more after the JSON value")
	}
	return NewDoc(v), nil
}

// An arrayID tells one array of the document from the others.
type arrayID struct {
	first *any
	n     int
}

type arrayIndex struct {
	scans int // before it is built
	built bool
	valueSet
}

// A valueSet holds values by kind, so that an operator tests them all at
// once: strings and numbers sorted, arrays and objects by their canonical
// keys. It indexes a document's array, or holds the values of $in or $nin.
type valueSet struct {
	strs          []string
	nums          []decimal
	comps         map[string]struct{}
	null, yes, no bool
}

// index returns the index of arr, or nil when arr is to be scanned; now
// asks for the index without a scan first.
func (d *Doc) index(arr []any, now bool) *arrayIndex {
	if d == nil || len(arr) == 0 || len(arr) < d.indexFrom {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := arrayID{&arr[0], len(arr)}
	x := d.arrays[id]
	if x == nil {
		if d.arrays == nil {
			d.arrays = make(map[arrayID]*arrayIndex)
		}
		x = &arrayIndex{}
		d.arrays[id] = x
	}
	if x.scans < d.scansFirst && !now {
		x.scans++
		return nil
	}
	if !x.built {
		x.add(arr)
		x.built = true
	}
	return x
}

// add adds the values to the set.
func (x *valueSet) add(vals []any) {
	for _, e := range vals {
		switch e := e.(type) {
		case nil:
			x.null = true
		case bool:
			x.yes, x.no = x.yes || e, x.no || !e
		case string:
			x.strs = append(x.strs, e)
		case json.Number, float64:
			if n, ok := number(e); ok {
				x.nums = append(x.nums, n)
			}
		case []any, map[string]any:
			if x.comps == nil {
				x.comps = make(map[string]struct{})
			}
			x.comps[canonical(e)] = struct{}{}
		}
	}
	slices.Sort(x.strs)
	slices.SortFunc(x.nums, compare)
}

// has reports whether the set holds the operand.
func (x *valueSet) has(val *value) bool {
	if val.key != "" {
		_, found := x.comps[val.key]
		return found
	}
	return x.contains(val.v)
}

// contains reports whether the set holds a scalar value.
func (x *valueSet) contains(v any) bool {
	switch v := v.(type) {
	case nil:
		return x.null
	case bool:
		return v && x.yes || !v && x.no
	case string:
		_, found := slices.BinarySearch(x.strs, v)
		return found
	case json.Number, float64:
		n, ok := number(v)
		if !ok {
			return false
		}
		_, found := slices.BinarySearchFunc(x.nums, n, compare)
		return found
	}
	return false
}

// passes reports whether a value of the set passes $gt, $gte, $lt, $lte
// or $prefix: the largest or smallest value of the operand's kind.
func (x *valueSet) passes(o *op) bool {
	if o.kind == opPrefix {
		p := o.val.v.(string)
		i := sort.SearchStrings(x.strs, p)
		return i < len(x.strs) && strings.HasPrefix(x.strs[i], p)
	}
	var lo, hi int // compared with the operand
	if s, ok := o.val.v.(string); ok {
		if len(x.strs) == 0 {
			return false
		}
		lo, hi = strings.Compare(x.strs[0], s), strings.Compare(x.strs[len(x.strs)-1], s)
	} else {
		if len(x.nums) == 0 {
			return false
		}
		lo, hi = compare(x.nums[0], o.val.num), compare(x.nums[len(x.nums)-1], o.val.num)
	}
	if o.kind == opLt || o.kind == opLte {
		return o.kind.holds(lo)
	}
	return o.kind.holds(hi)
}

// canonical returns a key for an array or object, equal for values that are
// equal as the filter sees them: numbers by their value, objects whatever
// their order of keys. Values nested deeper than any filter's are keyed
// "!", as are values no filter can equal.
func canonical(v any) string {
	var b strings.Builder
	writeCanonical(&b, v, 0)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any, depth int) {
	if depth > maxDepth {
		b.WriteByte('!')
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteByte('n')
	case bool:
		if v {
			b.WriteByte('t')
		} else {
			b.WriteByte('f')
		}
	case string:
		writeString(b, v)
	case json.Number, float64:
		n, ok := number(v)
		if !ok {
			b.WriteByte('!')
			return
		}
		b.WriteByte('d')
		if n.neg {
			b.WriteByte('-')
		}
		b.WriteString(n.hi)
		b.WriteString(n.lo)
		b.WriteByte('e')
		b.WriteString(strconv.FormatInt(n.exp, 10))
		b.WriteByte(';')
	case []any:
		b.WriteByte('[')
		for _, e := range v {
			writeCanonical(b, e, depth+1)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for _, k := range keys {
			writeString(b, k)
			writeCanonical(b, v[k], depth+1)
		}
		b.WriteByte('}')
	default:
		b.WriteByte('!')
	}
}

// writeString writes s with its length before it, so that it cannot run
// into what follows.
func writeString(b *strings.Builder, s string) {
	b.WriteByte('s')
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}
