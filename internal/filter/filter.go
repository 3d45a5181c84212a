package filter

import (
	"bytes"
	"encoding/json"
)

// The limits on a filter, checked by Parse.
const (
	maxSize       = 64 << 10 // bytes of JSON, as written and re-encoded
	maxConditions = 100      // bare literals and operators, in all of a filter's $and and $or
	maxSegments   = 32       // segments of one path
	maxNesting    = 8        // $and and $or inside one another
	maxDepth      = 64       // arrays and objects inside one another, anywhere in the filter
)

// A Filter is a parsed subscription filter. Its zero value and nil match
// every document. A Filter is never changed once parsed; its methods are safe
// for concurrent use.
type Filter struct {
	clauses []clause
	enc     []byte // the canonical encoding; set on the filter Parse returns
}

// A clause is one key of a filter with its value: a path and the operators
// its value must pass, or $and or $or with their filters.
type clause struct {
	key  string // as written, escapes included
	kind clauseKind
	path []segment // kind path
	lit  bool      // kind path: ops is one $eq written as a bare literal
	ops  []op      // kind path
	subs []*Filter // kind and, or
}

type clauseKind uint8

const (
	clausePath clauseKind = iota
	clauseAnd
	clauseOr
)

// PathError is the error Parse returns: Path names the offending place in
// the filter, written "filter" followed by its keys (".data.amount.$gt") and
// list indexes ("[1]"), keys as they are written; Msg says what is wrong.
type PathError struct {
	Path string
	Msg  string
}

func (e *PathError) Error() string { return e.Path + ": " + e.Msg }

// Parse parses and checks a filter, a JSON object. Every error it returns is
// a *PathError; it never panics, whatever raw holds.
func Parse(raw json.RawMessage) (*Filter, error) {
	if len(raw) > maxSize {
		return nil, &PathError{Path: "filter", Msg: sizeMsg(len(raw), "")}
	}
	obj, err := read(raw)
	if err != nil {
		return nil, err
	}
	var c compiler
	f, err := c.filter(obj, 0)
	if err != nil {
		return nil, err
	}
	if f.enc, err = f.encode(); err != nil {
		return nil, &PathError{Path: "filter", Msg: err.Error()}
	}
	if len(f.enc) > maxSize {
		return nil, &PathError{Path: "filter", Msg: sizeMsg(len(f.enc), " once re-encoded")}
	}
	return f, nil
}

// Match reports whether the document passes the filter; a nil Doc is the
// document null. Match never fails: a value of another type than an
// operator's just does not pass it.
func (f *Filter) Match(d *Doc) bool {
	if f == nil {
		return true
	}
	var v any
	if d != nil {
		v = d.v
	}
	return f.match(d, v)
}

// MarshalJSON returns the filter's canonical encoding: its keys and
// operators in the order they were written, without spaces, literal objects
// with their keys sorted, numbers as written. Parse gives an equal filter
// back from it. A nil Filter encodes as {}.
func (f *Filter) MarshalJSON() ([]byte, error) {
	if f == nil || f.enc == nil {
		return f.encode()
	}
	return bytes.Clone(f.enc), nil
}

// UnmarshalJSON sets f to the filter Parse returns for b, or returns its
// error.
func (f *Filter) UnmarshalJSON(b []byte) error {
	g, err := Parse(b)
	if err != nil {
		return err
	}
	*f = *g
	return nil
}

// String returns the canonical encoding, as MarshalJSON.
func (f *Filter) String() string {
	b, err := f.MarshalJSON()
	if err != nil {
		return "%!(" + err.Error() + ")"
	}
	return string(b)
}
