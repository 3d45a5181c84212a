package filter_test

import (
	"errors"
	"fmt"

	"github.com/kairos-sh/kairos/internal/filter"
)

// A filter is parsed once, when the subscription is put; each message's
// payload is decoded once and matched against every filter.
func Example() {
	f, err := filter.Parse([]byte(`{
		"type": {"$prefix": "invoice."},
		"data.amount": {"$gte": 1000},
		"$or": [{"data.customer.tier": "gold"}, {"data.tags": "vip"}]
	}`))
	if err != nil {
		panic(err)
	}
	for _, payload := range []string{
		`{"type": "invoice.paid", "data": {"amount": 1500, "customer": {"tier": "gold"}}}`,
		`{"type": "invoice.paid", "data": {"amount": 1500.0, "tags": ["eu", "vip"]}}`,
		`{"type": "invoice.paid", "data": {"amount": 999, "tags": ["vip"]}}`,
		`{"type": "charge.paid", "data": {"amount": 1500, "customer": {"tier": "gold"}}}`,
		`{"type": "invoice.paid", "data": {"amount": "1500", "customer": {"tier": "gold"}}}`,
	} {
		doc, err := filter.Decode([]byte(payload))
		if err != nil {
			panic(err)
		}
		fmt.Println(f.Match(doc))
	}
	// Output:
	// true
	// true
	// false
	// false
	// false
}

// Against an array, a value or $eq matches when the array holds it, and $ne
// when it does not.
func ExampleFilter_Match_arrays() {
	doc, _ := filter.Decode([]byte(`{"tags": ["eu", "vip"], "items": [{"sku": "A-1"}, {"sku": "B-2"}]}`))
	for _, s := range []string{
		`{"tags": "vip"}`,
		`{"tags": {"$ne": "vip"}}`,
		`{"tags": {"$nin": ["us", "ca"]}}`,
		`{"tags": ["eu", "vip"]}`,
		`{"items.1.sku": "B-2"}`,
		`{"items.sku": "B-2"}`,
		`{"items": {"$eq": {"sku": "A-1"}}}`,
	} {
		f, err := filter.Parse([]byte(s))
		if err != nil {
			panic(err)
		}
		fmt.Println(s, f.Match(doc))
	}
	// Output:
	// {"tags": "vip"} true
	// {"tags": {"$ne": "vip"}} false
	// {"tags": {"$nin": ["us", "ca"]}} true
	// {"tags": ["eu", "vip"]} true
	// {"items.1.sku": "B-2"} true
	// {"items.sku": "B-2"} false
	// {"items": {"$eq": {"sku": "A-1"}}} true
}

// A path that is missing matches $exists false, $ne and $nin, and nothing
// else; a null is there.
func ExampleFilter_Match_missing() {
	doc, _ := filter.Decode([]byte(`{"note": null}`))
	for _, s := range []string{
		`{"note": null}`,
		`{"note": {"$exists": true}}`,
		`{"gone": {"$exists": false}}`,
		`{"gone": null}`,
		`{"gone": {"$ne": "x"}}`,
		`{"gone": {"$lt": 1}}`,
	} {
		f, _ := filter.Parse([]byte(s))
		fmt.Println(s, f.Match(doc))
	}
	// Output:
	// {"note": null} true
	// {"note": {"$exists": true}} true
	// {"gone": {"$exists": false}} true
	// {"gone": null} false
	// {"gone": {"$ne": "x"}} true
	// {"gone": {"$lt": 1}} false
}

func ExamplePathError() {
	for _, s := range []string{
		`{"data.amount": {"$gt": {}}}`,
		`{"data": {"customer": {"tier": "gold"}}}`,
		`{"$or": [{"tier": "gold"}, {"amount": {"$between": [1, 2]}}]}`,
	} {
		_, err := filter.Parse([]byte(s))
		var pe *filter.PathError
		if errors.As(err, &pe) {
			fmt.Println(pe.Path)
		}
		fmt.Println(err)
	}
	// Output:
	// filter.data.amount.$gt
	// filter.data.amount.$gt: must be a number or string, got object
	// filter.data.customer
	// filter.data.customer: not an operator; an object under a path holds operators ($eq, $ne, $in, $nin, $gt, $gte, $lt, $lte, $exists, $prefix): write a nested field in the path ("data.customer"), or compare a whole object with {"$eq": {…}}
	// filter.$or[1].amount.$between
	// filter.$or[1].amount.$between: unknown operator $between; the operators are $eq, $ne, $in, $nin, $gt, $gte, $lt, $lte, $exists, $prefix
}

// A key holding a dot escapes it with a backslash (doubled in JSON); the
// canonical encoding keeps the keys as written.
func ExampleFilter_String() {
	f, _ := filter.Parse([]byte(`{ "metadata.k8s\\.io/name": "web", "amount": {"$lt": 1e3, "$gt": 10.50} }`))
	fmt.Println(f)
	doc, _ := filter.Decode([]byte(`{"metadata": {"k8s.io/name": "web"}, "amount": 999.9}`))
	fmt.Println(f.Match(doc))
	// Output:
	// {"metadata.k8s\\.io/name":"web","amount":{"$lt":1e3,"$gt":10.50}}
	// true
}
