package filter

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
)

// invoice is the document most match cases read.
const invoice = `{
	"type": "invoice.paid",
	"data": {
		"id": 12345678901234567890,
		"amount": 4200,
		"ratio": 0.25,
		"currency": "eur",
		"customer": {"tier": "gold", "country": "DE", "since": "2021-03-04T05:06:07Z"},
		"tags": ["vip", "eu", 7, null],
		"items": [{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1}],
		"note": null,
		"paid": true,
		"empty": [],
		"matrix": [[1, 2], [3]],
		"k8s.io/name": "web",
		"back\\slash": 1,
		"$type": "charge",
		"": "blank"
	}
}`

func TestMatch(t *testing.T) {
	// The cases that float64 numbers, as json.Unmarshal gives, cannot tell.
	beyondFloat := map[string]bool{"large integer exactly": true, "large integer off by one": true,
		"$gt large integer": true, "$lt large integer": true}
	for _, tc := range []struct {
		name, filter string
		doc          string // invoice when empty
		want         bool
	}{
		{"empty filter matches anything", `{}`, `null`, true},
		{"empty filter matches a scalar", `{}`, `3`, true},
		{"literal string", `{"type": "invoice.paid"}`, "", true},
		{"literal string differs", `{"type": "invoice.failed"}`, "", false},
		{"nested path", `{"data.customer.tier": "gold"}`, "", true},
		{"all keys must match", `{"data.customer.tier": "gold", "data.currency": "usd"}`, "", false},
		{"missing path does not equal", `{"data.customer.plan": "gold"}`, "", false},
		{"path through a scalar is missing", `{"type.length": 12}`, "", false},
		{"number literal equals by value", `{"data.amount": 4.2e3}`, "", true},
		{"number literal of other value", `{"data.amount": 4201}`, "", false},
		{"large integer exactly", `{"data.id": 12345678901234567890}`, "", true},
		{"large integer off by one", `{"data.id": 12345678901234567891}`, "", false},
		{"string never equals number", `{"data.amount": "4200"}`, "", false},
		{"literal against array: contains", `{"data.tags": "eu"}`, "", true},
		{"literal against array: not contained", `{"data.tags": "us"}`, "", false},
		{"number against array", `{"data.tags": 7.0}`, "", true},
		{"null against array holding null", `{"data.tags": null}`, "", true},
		{"null literal matches null", `{"data.note": null}`, "", true},
		{"null literal does not match missing", `{"data.gone": null}`, "", false},
		{"bool literal", `{"data.paid": true}`, "", true},
		{"bool literal false", `{"data.paid": false}`, "", false},
		{"array literal equals whole array", `{"data.tags": ["vip", "eu", 7, null]}`, "", true},
		{"array literal order matters", `{"data.tags": ["eu", "vip", 7, null]}`, "", false},
		{"array literal against element", `{"data.matrix": [3]}`, "", true},
		{"array index segment", `{"data.items.1.sku": "B-2"}`, "", true},
		{"array index out of range", `{"data.items.2.sku": {"$exists": true}}`, "", false},
		{"key on an array is missing", `{"data.items.sku": "A-1"}`, "", false},
		{"index segment on an object is a key", `{"0": "zero"}`, `{"0": "zero"}`, true},
		{"escaped dot", `{"data.k8s\\.io/name": "web"}`, "", true},
		{"unescaped dot splits", `{"data.k8s.io/name": "web"}`, "", false},
		{"escaped backslash", `{"data.back\\\\slash": 1}`, "", true},
		{"escaped dollar", `{"data.\\$type": "charge"}`, "", true},
		{"dollar inside a path", `{"data.$type": "charge"}`, "", true},
		{"top-level escaped dollar", `{"\\$id": 1}`, `{"$id": 1}`, true},

		{"$eq object deep", `{"data.items.0": {"$eq": {"qty": 2.0, "sku": "A-1"}}}`, "", true},
		{"$eq object with another key", `{"data.items.0": {"$eq": {"sku": "A-1"}}}`, "", false},
		{"$eq object within array", `{"data.items": {"$eq": {"sku": "B-2", "qty": 1}}}`, "", true},
		{"$eq empty array", `{"data.empty": {"$eq": []}}`, "", true},
		{"$ne scalar equal", `{"data.currency": {"$ne": "eur"}}`, "", false},
		{"$ne scalar other", `{"data.currency": {"$ne": "usd"}}`, "", true},
		{"$ne missing matches", `{"data.gone": {"$ne": 1}}`, "", true},
		{"$ne array holding it", `{"data.tags": {"$ne": "eu"}}`, "", false},
		{"$ne array not holding it", `{"data.tags": {"$ne": "us"}}`, "", true},
		{"$ne null against null", `{"data.note": {"$ne": null}}`, "", false},
		{"$in string", `{"data.customer.tier": {"$in": ["silver", "gold"]}}`, "", true},
		{"$in string missing", `{"data.customer.tier": {"$in": ["silver", "bronze"]}}`, "", false},
		{"$in many strings", `{"data.customer.tier": {"$in": ["a","b","c","d","e","f","g","h","gold"]}}`, "", true},
		{"$in many strings missing", `{"data.customer.tier": {"$in": ["a","b","c","d","e","f","g","h","i"]}}`, "", false},
		{"$in many strings and a number", `{"data.amount": {"$in": ["a","b","c","d","e","f","g","h",4200]}}`, "", true},
		{"$in array element", `{"data.tags": {"$in": ["us", "vip"]}}`, "", true},
		{"$in many strings, array element", `{"data.tags": {"$in": ["a","b","c","d","e","f","g","h","eu"]}}`, "", true},
		{"$in empty list", `{"data.currency": {"$in": []}}`, "", false},
		{"$in object", `{"data.customer": {"$in": [{"tier": "gold", "country": "DE", "since": "2021-03-04T05:06:07Z"}]}}`, "", true},
		{"$in missing path", `{"data.gone": {"$in": [null]}}`, "", false},
		{"$nin", `{"data.currency": {"$nin": ["usd", "gbp"]}}`, "", true},
		{"$nin holding it", `{"data.currency": {"$nin": ["usd", "eur"]}}`, "", false},
		{"$nin array element", `{"data.tags": {"$nin": ["eu"]}}`, "", false},
		{"$nin empty list", `{"data.currency": {"$nin": []}}`, "", true},
		{"$nin missing matches", `{"data.gone": {"$nin": ["x"]}}`, "", true},
		{"$gt number", `{"data.amount": {"$gt": 4199.99}}`, "", true},
		{"$gt equal", `{"data.amount": {"$gt": 4200}}`, "", false},
		{"$gte equal", `{"data.amount": {"$gte": 42e2}}`, "", true},
		{"$lt", `{"data.ratio": {"$lt": 0.3}}`, "", true},
		{"$lte below", `{"data.ratio": {"$lte": 0.2}}`, "", false},
		{"range", `{"data.amount": {"$gte": 1000, "$lt": 5000}}`, "", true},
		{"range outside", `{"data.amount": {"$gte": 1000, "$lt": 4200}}`, "", false},
		{"$gt negative", `{"data.amount": {"$gt": -1e400}}`, "", true},
		{"$gt large integer", `{"data.id": {"$gt": 12345678901234567889}}`, "", true},
		{"$lt large integer", `{"data.id": {"$lt": 12345678901234567890}}`, "", false},
		{"$gt string", `{"data.customer.since": {"$gt": "2021-01-01"}}`, "", true},
		{"$lt string", `{"data.customer.since": {"$lt": "2021-01-01"}}`, "", false},
		{"$gt string against number", `{"data.amount": {"$gt": "1"}}`, "", false},
		{"$gt number against string", `{"data.currency": {"$gt": 1}}`, "", false},
		{"$lt number against string either way", `{"data.currency": {"$lt": 1}}`, "", false},
		{"$gt array element", `{"data.tags": {"$gt": 6}}`, "", true},
		{"$gt array no element", `{"data.tags": {"$gt": 7}}`, "", false},
		{"$gt missing", `{"data.gone": {"$gt": 0}}`, "", false},
		{"$gt null", `{"data.note": {"$gt": 0}}`, "", false},
		{"$exists true", `{"data.note": {"$exists": true}}`, "", true},
		{"$exists false on null", `{"data.note": {"$exists": false}}`, "", false},
		{"$exists false on missing", `{"data.gone": {"$exists": false}}`, "", true},
		{"$exists true on missing", `{"data.gone": {"$exists": true}}`, "", false},
		{"$exists empty key", `{"data": {"$exists": true}}`, `{"data": {}}`, true},
		{"$prefix", `{"type": {"$prefix": "invoice."}}`, "", true},
		{"$prefix other", `{"type": {"$prefix": "charge."}}`, "", false},
		{"$prefix empty", `{"type": {"$prefix": ""}}`, "", true},
		{"$prefix array element", `{"data.tags": {"$prefix": "v"}}`, "", true},
		{"$prefix number", `{"data.amount": {"$prefix": "42"}}`, "", false},
		{"$exists and $ne", `{"data.currency": {"$exists": true, "$ne": "usd"}}`, "", true},

		{"$or one matches", `{"$or": [{"type": "x"}, {"data.paid": true}]}`, "", true},
		{"$or none matches", `{"$or": [{"type": "x"}, {"data.paid": false}]}`, "", false},
		{"$or of empty filter", `{"$or": [{}]}`, "", true},
		{"$and all match", `{"$and": [{"type": "invoice.paid"}, {"data.paid": true}]}`, "", true},
		{"$and one fails", `{"$and": [{"type": "invoice.paid"}, {"data.paid": false}]}`, "", false},
		{"$or beside a path", `{"type": {"$prefix": "invoice."}, "$or": [{"data.amount": {"$gt": 5000}}, {"data.customer.tier": "gold"}]}`, "", true},
		{"nested groups", `{"$or": [{"$and": [{"type": "x"}]}, {"$and": [{"$or": [{"data.currency": "eur"}]}]}]}`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.filter))
			if err != nil {
				t.Fatal(err)
			}
			src, name := tc.doc, tc.doc
			if src == "" {
				src, name = invoice, "the invoice"
			}
			doc, err := Decode([]byte(src))
			if err != nil {
				t.Fatal(err)
			}
			for how, d := range map[string]*Doc{"": doc, " with its arrays indexed": indexed(doc), " with its arrays scanned": scanned(doc)} {
				if got := f.Match(d); got != tc.want {
					t.Errorf("%s matches %s%s: %v, want %v", tc.filter, name, how, got, tc.want)
				}
			}
			// encoding/json's own decoding, with float64 numbers, gives the
			// same answer save for numbers beyond float64's precision.
			var plain any
			if err := json.Unmarshal([]byte(src), &plain); err != nil {
				t.Fatal(err)
			}
			if got := f.Match(indexed(NewDoc(plain))); got != tc.want && !beyondFloat[tc.name] {
				t.Errorf("%s matches %s decoded with float64: %v, want %v", tc.filter, name, got, tc.want)
			}
		})
	}
}

func TestNilFilterMatchesEverything(t *testing.T) {
	var f *Filter
	if !f.Match(nil) || !f.Match(NewDoc(map[string]any{"a": 1})) {
		t.Error("a nil filter does not match")
	}
	if !(&Filter{}).Match(NewDoc("x")) {
		t.Error("a zero filter does not match")
	}
}

func TestMatchOtherGoTypes(t *testing.T) {
	f, err := Parse([]byte(`{"a": 1, "b": {"$ne": 1}, "c": {"$exists": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Match(NewDoc(map[string]any{"a": 1, "c": struct{}{}})) {
		t.Error("an int matches a JSON number")
	}
	if !f.Match(NewDoc(map[string]any{"a": 1.0, "b": int64(1), "c": struct{}{}})) {
		t.Error("an int64 fails $ne, or a struct $exists")
	}
}

func TestDecode(t *testing.T) {
	for _, bad := range []string{``, `{`, `{} {}`, `1 2`, `nul`, `{"a":1}x`} {
		if doc, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) = %v, want an error", bad, doc)
		}
	}
	doc, err := Decode([]byte(" {\"n\": 1.50} \n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := doc.v.(map[string]any)["n"]; n != json.Number("1.50") {
		t.Errorf("Decode gives n = %#v, want json.Number(\"1.50\")", n)
	}
}

// indexed returns d with its arrays indexed before they are first tested.
func indexed(d *Doc) *Doc { return &Doc{v: d.v} }

// scanned returns d with its arrays never indexed.
func scanned(d *Doc) *Doc { return &Doc{v: d.v, indexFrom: math.MaxInt} }

// TestLargeArraysMatchAsScanned matches filters against an array long
// enough to be indexed, scanned first and through its index after, as a
// publish to many subscriptions does, and always indexed or always scanned:
// all must answer alike.
func TestLargeArraysMatchAsScanned(t *testing.T) {
	elems := []string{`null`, `true`, `"b"`, `"apple"`, `"apricot"`, `-3`, `2.50`, `1e3`, `12345678901234567890`,
		`[1, 2]`, `{"k": "v", "n": 1}`, `[]`, `{}`, `[[1]]`}
	for len(elems) < 3*indexFrom {
		elems = append(elems, fmt.Sprintf(`"pad%03d"`, len(elems)))
	}
	doc, err := Decode([]byte(`{"a": [` + strings.Join(elems, ", ") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		filter string
		want   bool
	}{
		{`{"a": null}`, true},
		{`{"a": true}`, true},
		{`{"a": false}`, false},
		{`{"a": "apple"}`, true},
		{`{"a": "app"}`, false},
		{`{"a": 2.5}`, true},
		{`{"a": 1000}`, true},
		{`{"a": 12345678901234567891}`, false},
		{`{"a": {"$eq": [1, 2.0]}}`, true},
		{`{"a": {"$eq": [2, 1]}}`, false},
		{`{"a": {"$eq": {"n": 1.0, "k": "v"}}}`, true},
		{`{"a": {"$eq": {"k": "v"}}}`, false},
		{`{"a": {"$eq": []}}`, true},
		{`{"a": {"$eq": [[1]]}}`, true},
		{`{"a": {"$ne": "apple"}}`, false},
		{`{"a": {"$ne": "pear"}}`, true},
		{`{"a": {"$in": ["pear", -3e0]}}`, true},
		{`{"a": {"$in": ["pear", {"k": "v", "n": 1}]}}`, true},
		{`{"a": {"$in": ["pear", {"k": "v"}]}}`, false},
		{`{"a": {"$nin": ["pear", false]}}`, true},
		{`{"a": {"$nin": ["pear", null]}}`, false},
		{`{"a": {"$gt": 1000}}`, true},
		{`{"a": {"$gt": 12345678901234567890}}`, false},
		{`{"a": {"$gte": 12345678901234567890}}`, true},
		{`{"a": {"$lt": -3}}`, false},
		{`{"a": {"$lte": -3}}`, true},
		{`{"a": {"$gt": "pad"}}`, true},
		{`{"a": {"$lt": "apple"}}`, false},
		{`{"a": {"$lte": "apple"}}`, true},
		{`{"a": {"$prefix": "apr"}}`, true},
		{`{"a": {"$prefix": "c"}}`, false},
		{`{"a": {"$prefix": "pad0"}}`, true},
	} {
		f, err := Parse([]byte(tc.filter))
		if err != nil {
			t.Fatal(err)
		}
		for _, how := range []string{"as decoded", "as decoded again", "indexed", "scanned"} {
			d := doc
			switch how {
			case "indexed":
				d = indexed(doc)
			case "scanned":
				d = scanned(doc)
			}
			if got := f.Match(d); got != tc.want {
				t.Errorf("%s, matched %s: %v, want %v", tc.filter, how, got, tc.want)
			}
		}
	}
}

// TestDocMatchedConcurrently matches one Doc from several goroutines while
// its array is indexed; -race checks it.
func TestDocMatchedConcurrently(t *testing.T) {
	elems := make([]string, 100)
	for i := range elems {
		elems[i] = fmt.Sprintf(`"t%d"`, i)
	}
	doc, err := Decode([]byte(`{"tags": [` + strings.Join(elems, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse([]byte(`{"tags": "t99", "$or": [{"tags": {"$prefix": "t5"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if !f.Match(doc) {
					t.Error("no match")
				}
			}
		})
	}
	wg.Wait()
}
