// Package filter owns the language of subscription filters: Parse checks a
// filter when a subscription is put, and the API process matches each
// published message's payload against its topic's filters. It imports the
// standard library only and knows nothing of Redis or HTTP.
//
// A publish decodes its payload once, with Decode, and asks each filter's
// Match about the decoded document, a Doc. Parse costs some tens of
// microseconds: keep parsed filters rather than parse them at each publish.
//
// # Filters
//
// A filter is a JSON object; a document matches when it matches every key:
//
//	{"type": {"$prefix": "invoice."}, "data.customer.tier": {"$in": ["gold", "platinum"]}}
//
// Each key is a path into the payload, and its value is either a literal,
// which the value at the path must equal, or an object of operators, all of
// which the value at the path must pass. A key $and or $or takes a non-empty
// list of filters, all or one of which must match. The empty filter {}
// matches every document, as does a nil *Filter.
//
// # Paths
//
// A path names a value by its keys, joined by dots: "data.customer.tier". A
// segment written as a decimal index ("items.0.sku") takes that element of
// an array; any other segment on an array, a segment past the end of an
// array, on a scalar or naming an absent key finds no value: the path is
// missing. Arrays are not searched along the way: "items.sku" finds nothing
// in {"items": [{"sku": "A-1"}]}.
//
// A backslash takes the next character as it is: "\." is a dot within a key
// ("metadata.k8s\.io/name", written "metadata.k8s\\.io/name" in JSON), "\\"
// a backslash, and "\$" a dollar sign, which a path must escape when it
// begins with one ("\$type"); a backslash before anything else is an error.
// A path may not be empty nor have an empty segment.
//
// # Operators
//
//   - $eq V: the value equals V. A bare literal V (anything but an object)
//     is $eq V; comparing with an object takes $eq.
//   - $ne V: not $eq V.
//   - $in [V, …]: the value equals one of the list's values (an empty list
//     matches nothing).
//   - $nin [V, …]: not $in.
//   - $gt, $gte, $lt, $lte V, with V a number or a string: numbers compare
//     with numbers, strings with strings, by their UTF-8 bytes, which is the
//     order of code points (RFC 3339 times written alike, in the same zone,
//     compare in time order).
//   - $exists true or false: there is a value at the path (null counts).
//   - $prefix S, with S a string: the value is a string that begins with S.
//
// Equality is deep: objects equal when they hold the same keys with equal
// values, arrays when they hold equal elements in the same order. Values of
// different JSON types never equal and never compare: "1" is not 1, and
// {"$lt": 10} does not match a string. A missing path passes $exists false,
// $ne and $nin, and no other operator; null matches null, and only where
// the path is there.
//
// When the value is an array, $eq, $in, the comparisons and $prefix pass
// when the array itself or one of its elements passes ({"tags": "vip"}
// matches {"tags": ["eu", "vip"]}), and so $ne and $nin pass when neither
// the array nor any element equals. Elements that are arrays are compared
// whole, not searched.
//
// # Numbers
//
// Numbers compare by their exact decimal value, whatever their size: 1,
// 1.0 and 1e0 are equal and 9007199254740993 is greater than
// 9007199254740992 (which float64 cannot tell), as long as the payload is
// decoded by Decode; a document json.Unmarshal gives NewDoc holds float64
// numbers, rounded to 53 bits. An exponent (the e part) beyond ±10^15
// counts as ±10^15.
//
// # Cost
//
// Matching a typical filter allocates nothing and costs some hundreds of
// nanoseconds (BenchmarkMatch1000Filters). The cost grows with the filter's
// size, not with the payload's: a path costs a lookup a segment; $in and
// $nin find a value among theirs by binary search; and an array of 16
// elements or more is scanned element by element only the first time an
// operator looks into it. After that, an index the Doc builds once answers:
// the array's strings and numbers sorted, its arrays and objects by
// canonical keys. An operand that is an array or object has the index built
// at once, as comparing it with each element could cost its size each time.
//
// # Limits and errors
//
// A filter holds at most 100 conditions (bare literals and operators, in
// all its $and and $or), paths of at most 32 segments, $and and $or nested
// at most 8 deep, arrays and objects nested at most 64 deep, and it is at
// most 64 KiB of JSON as written and as re-encoded. A key may appear once in
// an object. Parse refuses a filter beyond these limits, one with an unknown
// operator, with an object of other keys than operators under a path, with
// a key that begins with $ other than $and and $or, or with an operand of
// the wrong type, with a *PathError naming the place:
//
//	filter.data.amount.$gt: must be a number or string, got object
//
// Neither Parse nor Match panics, and neither recurses deeper than the
// limits above, whatever the input.
package filter
