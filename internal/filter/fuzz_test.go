package filter

import (
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// filterSeeds are filters, valid and not, that both fuzzers start from.
var filterSeeds = []string{
	`{}`,
	`{"type": "invoice.paid"}`,
	`{"data.customer.tier": {"$in": ["gold", "platinum"]}, "data.amount": {"$gte": 1000, "$lt": 1e6}}`,
	`{"$or": [{"type": {"$prefix": "invoice."}}, {"data.tags": "urgent"}], "data.note": {"$exists": false}}`,
	`{"$and": [{"a": {"$ne": null}}, {"$or": [{"b.0": [1, {"x": 2}]}, {"c": {"$nin": [true, 1.5, "s"]}}]}]}`,
	`{"k8s\\.io/name": "web", "\\$type": {"$eq": {"a": [1, 2]}}, "back\\\\slash": -0.0}`,
	`{"a": {"$in": ["a","b","c","d","e","f","g","h","i", 1]}}`,
	`{"a": {"$gt": "2021-01-01", "$lte": "2022"}}`,
	`{"data.id": 12345678901234567890, "x": 1e400}`,
	`{"data.amount": {"$gt": {}}}`,
	`{"a": {"b": 1}}`,
	`{"a": {"$foo": 1}}`,
	`{"$gt": 1}`,
	`{"a": 1, "a": 2}`,
	`{"a..b": 1}`,
	`{"a\\x": 1}`,
	`{"$or": []}`,
	`{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{}]}]}]}]}]}]}]}]}`,
	`[1]`,
	`{"a": 1} x`,
	`{"a": `,
}

// FuzzParse feeds Parse anything. It must not panic, must fail with a
// *PathError only, and a filter it returns must encode to a filter that
// parses to an equal one, which encodes alike.
func FuzzParse(f *testing.F) {
	for _, s := range filterSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		flt, err := Parse(raw)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || !strings.HasPrefix(pe.Path, "filter") || pe.Msg == "" {
				t.Fatalf("Parse: %v (%T), want a *PathError with a path and a message", err, err)
			}
			return
		}
		enc := flt.String()
		again, err := Parse([]byte(enc))
		if err != nil {
			t.Fatalf("%s encodes as %s, which does not parse: %v", raw, enc, err)
		}
		// reflect.DeepEqual, as cmp.Equal takes seconds on nested $or.
		if !reflect.DeepEqual(flt, again) {
			t.Fatalf("%s encodes as %s, which parses to another filter (-want +got):\n%s", raw, enc, cmp.Diff(flt, again, cmpFilters))
		}
		if s := again.String(); s != enc {
			t.Fatalf("%s encodes as %s, then as %s", raw, enc, s)
		}
		for _, doc := range []any{nil, map[string]any{}, "x", json.Number("1"), []any{1.0, "a", nil}} {
			flt.Match(NewDoc(doc))
		}
	})
}

// FuzzMatch matches a filter and a path's operators against a payload. No
// input may panic, the payload's arrays indexed or scanned match alike,
// and:
//   - {"$or": [F]} and {"$and": [F]} match as F does;
//   - for a path P and a value V: {P: V} (V not an object), {P: {"$in": [V]}}
//     and {P: {"$eq": V}} match alike, {P: {"$ne": V}} and {P: {"$nin": [V]}}
//     exactly when those do not, {P: {"$exists": true}} exactly when
//     {P: {"$exists": false}} does not;
//   - the value at P equals itself, and equals V exactly when their
//     canonical keys are equal;
//   - with V a number or string and the value at P a scalar of the same
//     kind, exactly one of $gt and $lte matches, one of $lt and $gte, and
//     $gte with $lte match as $eq; against a scalar of another kind none of
//     them does, nor $prefix against a non-string.
func FuzzMatch(f *testing.F) {
	for _, s := range filterSeeds {
		f.Add(s, invoice, "data.amount", "4200")
	}
	f.Add(`{"a": [1, 2]}`, `{"a": [[1, 2], 3]}`, "a", "[1,2]")
	f.Add(`{"a.1": {"$gt": 1}}`, `{"a": [0, 1.5]}`, "a.1", "1.50")
	f.Add(`{"a": {"$lt": "b"}}`, `{"a": "abc"}`, "a", `"ab"`)
	f.Add(`{"a": {"$exists": true}}`, `{"a": null}`, "a", "null")
	f.Add(`{"x": 1}`, `{"x": {"y": 1}}`, "x", `{"y": 1.0}`)
	f.Add(`{"x": -0}`, `{"x": 0e10}`, "x", "-0.0")
	f.Add(`{"t": {"$prefix": "in"}}`, `{"t": ["x", "inv"]}`, "t", `"in"`)
	f.Add(`{"n": 9007199254740993}`, `{"n": 9007199254740992}`, "n", "9007199254740993")
	f.Fuzz(func(t *testing.T, filter, payload, path, val string) {
		doc, err := Decode([]byte(payload))
		if err != nil {
			return
		}
		if flt, err := Parse([]byte(filter)); err == nil {
			m := flt.Match(doc)
			for how, d := range map[string]*Doc{"again": doc, "indexed": indexed(doc), "scanned": scanned(doc)} {
				if flt.Match(d) != m {
					t.Fatalf("%s matches %s: %v, but not %s", flt, payload, m, how)
				}
			}
			for _, group := range []string{"$or", "$and"} {
				wrapped := `{"` + group + `":[` + flt.String() + `]}`
				if g, err := Parse([]byte(wrapped)); err == nil && g.Match(doc) != m {
					t.Fatalf("%s matches %s: %v, but %s does not", flt, payload, m, wrapped)
				}
			}
		}

		if !utf8.ValidString(path) {
			return // JSON would change the key
		}
		segs, err := splitPath(path)
		if err != nil {
			return
		}
		vdoc, err := Decode([]byte(val))
		if err != nil {
			return
		}
		v := vdoc.v
		key, _ := json.Marshal(path)
		lit, _ := json.Marshal(v)
		match := func(ops string) (matched, ok bool) {
			flt, err := Parse([]byte(`{` + string(key) + `:` + ops + `}`))
			if err != nil {
				return false, false // too deep or large
			}
			m := flt.Match(doc)
			if flt.Match(indexed(doc)) != m || flt.Match(scanned(doc)) != m || flt.Match(doc) != m {
				t.Fatalf("%s matches %s: %v, but not with its arrays indexed, or scanned", flt, payload, m)
			}
			return m, true
		}
		eq, ok := match(`{"$eq":` + string(lit) + `}`)
		if !ok {
			return
		}
		in, _ := match(`{"$in":[` + string(lit) + `]}`)
		ne, _ := match(`{"$ne":` + string(lit) + `}`)
		nin, _ := match(`{"$nin":[` + string(lit) + `]}`)
		if in != eq || ne == eq || nin == eq {
			t.Fatalf("%s against %s: $eq %v, $in %v, $ne %v, $nin %v", path, lit, eq, in, ne, nin)
		}
		if _, isObj := v.(map[string]any); !isObj {
			if bare, _ := match(string(lit)); bare != eq {
				t.Fatalf("%s against %s: bare %v, $eq %v", path, lit, bare, eq)
			}
		}
		exists, _ := match(`{"$exists":true}`)
		absent, _ := match(`{"$exists":false}`)
		at, found := resolve(doc.v, segs)
		if exists == absent || exists != found {
			t.Fatalf("%s: $exists true %v, false %v; found %v", path, exists, absent, found)
		}
		if found {
			if eq, same := equal(at, v), canonical(at) == canonical(v); eq != same {
				t.Fatalf("%s (%s) against %s: equal %v, canonical keys equal %v", path, self(at), lit, eq, same)
			}
			own, _ := json.Marshal(at)
			if same, ok := match(`{"$eq":` + string(own) + `}`); ok && !same {
				t.Fatalf("%s: the value %s does not equal itself", path, own)
			}
		}

		_, litStr := v.(string)
		_, litNum := v.(json.Number)
		if !litStr && !litNum {
			return
		}
		gt, _ := match(`{"$gt":` + string(lit) + `}`)
		gte, _ := match(`{"$gte":` + string(lit) + `}`)
		lt, _ := match(`{"$lt":` + string(lit) + `}`)
		lte, _ := match(`{"$lte":` + string(lit) + `}`)
		if _, isArr := at.([]any); isArr {
			return
		}
		_, atStr := at.(string)
		_, atNum := at.(json.Number)
		if found && (litStr && atStr || litNum && atNum) {
			if gt == lte || lt == gte || (gte && lte) != eq {
				t.Fatalf("%s (%s) against %s: $gt %v, $gte %v, $lt %v, $lte %v, $eq %v", path, self(at), lit, gt, gte, lt, lte, eq)
			}
		} else if gt || gte || lt || lte {
			t.Fatalf("%s (%s) against %s: $gt %v, $gte %v, $lt %v, $lte %v", path, self(at), lit, gt, gte, lt, lte)
		}
		if litStr {
			prefix, _ := match(`{"$prefix":` + string(lit) + `}`)
			if want := atStr && strings.HasPrefix(at.(string), v.(string)); prefix != want {
				t.Fatalf("%s (%s): $prefix %s gives %v", path, self(at), lit, prefix)
			}
		}
	})
}

func self(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// FuzzCompare holds compare against math/big for numbers with exponents up
// to 1000, and parseDecimal against JSON's grammar.
func FuzzCompare(f *testing.F) {
	for _, s := range [][2]string{{"1", "1.0"}, {"-0", "0e5"}, {"0.1e1", "1"}, {"123.450", "12345e-2"},
		{"9007199254740993", "9007199254740992"}, {"-1.5", "-1.25"}, {"1e-400", "0"}, {"12", "120"}, {"01", "1"}, {"1.", ".1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		da, okA := parseDecimal(a)
		db, okB := parseDecimal(b)
		for _, x := range []struct {
			s  string
			ok bool
		}{{a, okA}, {b, okB}} {
			isNumber := json.Valid([]byte(x.s)) && strings.Trim(x.s, " \t\r\n") == x.s && x.s != "" && (x.s[0] == '-' || isDigit(x.s[0]))
			if x.ok != isNumber {
				t.Fatalf("parseDecimal(%q) ok = %v, JSON says %v", x.s, x.ok, isNumber)
			}
		}
		if !okA || !okB || !smallExp(a) || !smallExp(b) {
			return
		}
		ra, _ := new(big.Rat).SetString(a)
		rb, _ := new(big.Rat).SetString(b)
		if got, want := compare(da, db), ra.Cmp(rb); got != want {
			t.Fatalf("compare(%s, %s) = %d, math/big says %d", a, b, got, want)
		}
	})
}

func smallExp(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	x, err := strconv.Atoi(s[i+1:])
	return err == nil && -1000 <= x && x <= 1000
}
