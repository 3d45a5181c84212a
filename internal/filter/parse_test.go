package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const allOps = "$eq, $ne, $in, $nin, $gt, $gte, $lt, $lte, $exists, $prefix"

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, filter, want string
	}{
		{"nothing", ``, `filter: must be a JSON object, got nothing`},
		{"only spaces", " \n", `filter: must be a JSON object, got nothing`},
		{"null", `null`, `filter: must be an object, got null`},
		{"array", `[{"a": 1}]`, `filter: must be an object, got array`},
		{"string", `"a"`, `filter: must be an object, got string`},
		{"invalid JSON", `{"a": tru}`, `filter.a: invalid JSON: invalid character '}' in literal true (expecting 'e')`},
		{"cut short", `{"a": {"$in": [1, 2`, `filter.a.$in: invalid JSON: unexpected end`},
		{"two objects", `{} {}`, `filter: invalid JSON: more after the object`},
		{"duplicate key", `{"a": 1, "b": 2, "a": 3}`, `filter.a: duplicate key`},
		{"duplicate operator", `{"a": {"$gt": 1, "$gt": 2}}`, `filter.a.$gt: duplicate key`},
		{"duplicate key in a literal", `{"a": {"$eq": {"x": 1, "x": 1}}}`, `filter.a.$eq.x: duplicate key`},
		{"object under a path", `{"data": {"customer": {"tier": "gold"}}}`,
			`filter.data.customer: not an operator; an object under a path holds operators (` + allOps + `): ` +
				`write a nested field in the path ("data.customer"), or compare a whole object with {"$eq": {…}}`},
		{"operator beside a field", `{"a": {"$gt": 1, "b": 2}}`,
			`filter.a.b: not an operator; an object under a path holds operators (` + allOps + `): ` +
				`write a nested field in the path ("a.b"), or compare a whole object with {"$eq": {…}}`},
		{"empty operators", `{"a": {}}`, `filter.a: must hold operators (` + allOps + `), got an empty object`},
		{"unknown operator", `{"data.amount": {"$gte": 1, "$between": [1, 2]}}`,
			`filter.data.amount.$between: unknown operator $between; the operators are ` + allOps},
		{"operator at the top", `{"$gt": 1}`, `filter.$gt: unknown key; a filter's keys are paths, "$and" and "$or" ` +
			`(operators go under a path, as in {"amount": {"$gt": 10}}; a path that starts with $ is written \$)`},
		{"$not at the top", `{"$not": {"a": 1}}`, `filter.$not: unknown key; a filter's keys are paths, "$and" and "$or" ` +
			`(operators go under a path, as in {"amount": {"$gt": 10}}; a path that starts with $ is written \$)`},
		{"$gt object", `{"data.amount": {"$gt": {}}}`, `filter.data.amount.$gt: must be a number or string, got object`},
		{"$lte bool", `{"a": {"$lte": true}}`, `filter.a.$lte: must be a number or string, got boolean`},
		{"$lt null", `{"a": {"$lt": null}}`, `filter.a.$lt: must be a number or string, got null`},
		{"$gte array", `{"a": {"$gte": [1]}}`, `filter.a.$gte: must be a number or string, got array`},
		{"$in not a list", `{"a": {"$in": "x"}}`, `filter.a.$in: must be a list of values, got string`},
		{"$nin object", `{"a": {"$nin": {"x": 1}}}`, `filter.a.$nin: must be a list of values, got object`},
		{"$exists string", `{"a": {"$exists": "yes"}}`, `filter.a.$exists: must be true or false, got string`},
		{"$exists number", `{"a": {"$exists": 1}}`, `filter.a.$exists: must be true or false, got number`},
		{"$prefix number", `{"a": {"$prefix": 4}}`, `filter.a.$prefix: must be a string, got number`},
		{"$or object", `{"$or": {"a": 1}}`, `filter.$or: must be a non-empty list of filters, got object`},
		{"$and empty", `{"$and": []}`, `filter.$and: must be a non-empty list of filters, got an empty one`},
		{"$or of a string", `{"$or": [{"a": 1}, "b"]}`, `filter.$or[1]: must be a filter (an object), got string`},
		{"error inside $or", `{"x": 1, "$or": [{"a": 1}, {"$and": [{"b": {"$gt": null}}]}]}`,
			`filter.$or[1].$and[0].b.$gt: must be a number or string, got null`},
		{"empty path", `{"": 1}`, `filter.: empty path`},
		{"leading dot", `{".a": 1}`, `filter..a: empty segment (a dot at the start or end of the path, or two in a row)`},
		{"trailing dot", `{"a.": 1}`, `filter.a.: empty segment (a dot at the start or end of the path, or two in a row)`},
		{"two dots", `{"a..b": 1}`, `filter.a..b: empty segment (a dot at the start or end of the path, or two in a row)`},
		{"backslash at the end", `{"a\\": 1}`, `filter.a\: a backslash ends the path; write \\ for a backslash`},
		{"unknown escape", `{"a\\b": 1}`, `filter.a\b: a backslash escapes only '.', '\' and '$'; write \\ for a backslash`},
		{"33 segments", `{"` + strings.Repeat("a.", 32) + `a": 1}`, `filter.` + strings.Repeat("a.", 32) + `a: more than 32 segments`},
		{"9 nested groups", strings.Repeat(`{"$or": [`, 9) + `{}` + strings.Repeat(`]}`, 9),
			`filter` + strings.Repeat(`.$or[0]`, 8) + `.$or: $and and $or nest more than 8 deep`},
		{"literal too deep", `{"a": ` + strings.Repeat(`[`, 64) + strings.Repeat(`]`, 64) + `}`,
			`filter.a` + strings.Repeat(`[0]`, 63) + `: nests deeper than 64 arrays and objects`},
		{"101 conditions", conditions(101), `filter.k100: more than 100 conditions (bare values and operators) in the filter`},
		{"101 operators", `{"a": {"$exists": true, "$ne": 1}, "$or": [` + strings.TrimSuffix(conditions(97), "}") + `, "x": {"$gt": 1, "$lt": 2}}]}`,
			`filter.$or[0].x.$lt: more than 100 conditions (bare values and operators) in the filter`},
		{"too large", `{"a": "` + strings.Repeat("x", 64<<10) + `"}`, `filter: is 65545 bytes, more than the 65536 allowed`},
		{"too large once re-encoded", `{"a": "` + strings.Repeat("\u2028", 12<<10) + `"}`,
			`filter: is 73736 bytes once re-encoded, more than the 65536 allowed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.filter))
			if err == nil {
				t.Fatalf("Parse gives %s, want error %q", f, tc.want)
			}
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse gives %T, want a *PathError", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("Parse gives\n%s\nwant\n%s", got, tc.want)
			}
			if !strings.HasPrefix(tc.want, pe.Path+": ") {
				t.Errorf("Path = %q", pe.Path)
			}
		})
	}
}

// conditions returns a filter of n keys k0, k1, … with bare values.
func conditions(n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d": %d`, i, i)
	}
	return "{" + strings.Join(keys, ", ") + "}"
}

func TestParseLimitsAllow(t *testing.T) {
	for name, filter := range map[string]string{
		"100 conditions":          conditions(100),
		"32 segments":             `{"` + strings.Repeat("a.", 31) + `a": 1}`,
		"8 nested groups":         strings.Repeat(`{"$or": [`, 8) + `{}` + strings.Repeat(`]}`, 8),
		"literal 63 deep":         `{"a": ` + strings.Repeat(`[`, 63) + strings.Repeat(`]`, 63) + `}`,
		"64 KiB":                  `{"a": "` + strings.Repeat("x", 64<<10-10) + `"}`,
		"a long list in one $in":  `{"a": {"$in": [` + strings.Repeat(`"x", `, 5000) + `1]}}`,
		"spaces beyond 64 KiB":    `{"a": 1}` + strings.Repeat(" ", 64<<10-8),
		"$ and dots within a key": `{"a.$b.c$": 1}`,
	} {
		if _, err := Parse([]byte(filter)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", ` { } `, `{}`},
		{"order kept", `{"b": 1, "a": {"$lt": 10, "$gt": 1.50}}`, `{"b":1,"a":{"$lt":10,"$gt":1.50}}`},
		{"literal keys sorted", `{"a": {"$eq": {"z": 1, "y": [true, null]}}}`, `{"a":{"$eq":{"y":[true,null],"z":1}}}`},
		{"escapes kept", `{"k8s\\.io": "<b>", "\\$x": "\u00e9"}`, `{"k8s\\.io":"<b>","\\$x":"é"}`},
		{"groups", `{"$or": [{"a": 1}, {"$and": [{"b": {"$in": ["x"]}}]}]}`, `{"$or":[{"a":1},{"$and":[{"b":{"$in":["x"]}}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.String(); got != tc.want {
				t.Errorf("String() = %s, want %s", got, tc.want)
			}
			g, err := Parse([]byte(f.String()))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(f, g, cmpFilters); diff != "" {
				t.Errorf("parsed again (-want +got):\n%s", diff)
			}
		})
	}
}

var cmpFilters = cmp.AllowUnexported(Filter{}, clause{}, segment{}, op{}, value{}, valueSet{}, decimal{})

func TestFilterInJSON(t *testing.T) {
	var sub struct {
		Filter *Filter `json:"filter"`
	}
	if err := json.Unmarshal([]byte(`{"filter": {"a": {"$gt": 1}}}`), &sub); err != nil {
		t.Fatal(err)
	}
	if b, err := json.Marshal(sub); err != nil || string(b) != `{"filter":{"a":{"$gt":1}}}` {
		t.Errorf("Marshal gives %s, %v", b, err)
	}
	err := json.Unmarshal([]byte(`{"filter": {"a": {"$gt": {}}}}`), &sub)
	var pe *PathError
	if !errors.As(err, &pe) || pe.Path != "filter.a.$gt" {
		t.Errorf("Unmarshal gives %v, want a *PathError at filter.a.$gt", err)
	}
	var none *Filter
	if b, err := none.MarshalJSON(); err != nil || string(b) != "{}" {
		t.Errorf("a nil filter encodes as %s, %v", b, err)
	}
}
