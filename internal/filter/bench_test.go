package filter

import (
	"fmt"
	"strings"
	"testing"
)

// benchFilters returns n filters of the shapes subscriptions have, with
// values that vary, a third of which match the invoice.
func benchFilters(tb testing.TB, n int) []*Filter {
	tb.Helper()
	shapes := []string{
		`{"type": "invoice.paid", "data.amount": {"$gte": %d}}`,
		`{"data.customer.tier": {"$in": ["silver", "platinum", "t%d"]}, "data.customer.country": "DE"}`,
		`{"$or": [{"type": {"$prefix": "charge.%d"}}, {"data.tags": "urgent"}]}`,
		`{"data.customer.id": "cus_%d"}`,
		`{"data.items.0.sku": {"$ne": "sku_%d"}, "data.amount": {"$lt": 1000000}, "data.currency": {"$exists": true}}`,
		`{"type": {"$in": ["invoice.created", "invoice.failed", "a", "b", "c", "d", "e", "f", "t%d"]}, "data.paid": true}`,
	}
	fs := make([]*Filter, n)
	for i := range fs {
		f, err := Parse([]byte(fmt.Sprintf(shapes[i%len(shapes)], i)))
		if err != nil {
			tb.Fatal(err)
		}
		fs[i] = f
	}
	return fs
}

// BenchmarkMatch1000Filters matches one decoded payload against 1,000
// filters, as a publish to a topic with 1,000 subscriptions does: the
// target is 1 ms.
func BenchmarkMatch1000Filters(b *testing.B) {
	fs := benchFilters(b, 1000)
	doc, err := Decode([]byte(invoice))
	if err != nil {
		b.Fatal(err)
	}
	matched := 0
	for b.Loop() {
		matched = 0
		for _, f := range fs {
			if f.Match(doc) {
				matched++
			}
		}
	}
	b.ReportMetric(float64(matched), "matched")
}

// BenchmarkMatch1000FiltersLargeArray matches 1,000 filters that look into
// an array of 20,000 elements: the first scans it, the second indexes it,
// the others use the index.
func BenchmarkMatch1000FiltersLargeArray(b *testing.B) {
	elems := make([]string, 10000) // a string and a number each
	for i := range elems {
		elems[i] = fmt.Sprintf(`"tag%d", %d`, i, i)
	}
	payload := []byte(`{"tags": [` + strings.Join(elems, ", ") + `]}`)
	shapes := []string{
		`{"tags": "tag%d"}`,
		`{"tags": {"$in": [%d, "x", "y"]}}`,
		`{"tags": {"$nin": ["none%d"]}}`,
		`{"tags": {"$gt": %d}}`,
		`{"tags": {"$prefix": "tag%d"}}`,
	}
	fs := make([]*Filter, 1000)
	for i := range fs {
		f, err := Parse([]byte(fmt.Sprintf(shapes[i%len(shapes)], i*10)))
		if err != nil {
			b.Fatal(err)
		}
		fs[i] = f
	}
	decoded, err := Decode(payload)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		doc := NewDoc(decoded.v) // with no index yet
		for _, f := range fs {
			f.Match(doc)
		}
	}
}

// BenchmarkDecode decodes the payload the matching above reads, once per
// publish.
func BenchmarkDecode(b *testing.B) {
	b.SetBytes(int64(len(invoice)))
	for b.Loop() {
		if _, err := Decode([]byte(invoice)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	raw := []byte(`{"type": "invoice.paid", "data.customer.tier": {"$in": ["gold", "platinum"]}, "data.amount": {"$gte": 1000, "$lt": 1e6}}`)
	for b.Loop() {
		if _, err := Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}
