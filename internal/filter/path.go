package filter

import (
	"errors"
	"fmt"
)

// A segment is one step of a path: the key of an object's member or, when it
// spells an index, an element of an array.
type segment struct {
	key   string
	index int // the array index key spells ("0", "17"), or -1
}

// splitPath splits a filter's key into segments at each '.'. A backslash
// takes the next character as it is: "\." is a dot within a segment, "\\" a
// backslash, "\$" a dollar sign (which lets a path begin with one).
func splitPath(key string) ([]segment, error) {
	if key == "" {
		return nil, errors.New("empty path")
	}
	var segs []segment
	var cur []byte
	end := func() error {
		if len(cur) == 0 {
			return errors.New("empty segment (a dot at the start or end of the path, or two in a row)")
		}
		if len(segs) == maxSegments {
			return fmt.Errorf("more than %d segments", maxSegments)
		}
		k := string(cur)
		segs = append(segs, segment{key: k, index: index(k)})
		cur = cur[:0]
		return nil
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '.':
			if err := end(); err != nil {
				return nil, err
			}
		case '\\':
			if i+1 == len(key) {
				return nil, errors.New(`a backslash ends the path; write \\ for a backslash`)
			}
			i++
			switch e := key[i]; e {
			case '.', '\\', '$':
				cur = append(cur, e)
			default:
				return nil, errors.New(`a backslash escapes only '.', '\' and '$'; write \\ for a backslash`)
			}
		default:
			cur = append(cur, c)
		}
	}
	if err := end(); err != nil {
		return nil, err
	}
	return segs, nil
}

// index returns the array index k spells, a decimal number without leading
// zeros of at most 9 digits, or -1.
func index(k string) int {
	if k == "" || len(k) > 9 || (k[0] == '0' && len(k) > 1) {
		return -1
	}
	n := 0
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return -1
		}
		n = n*10 + int(k[i]-'0')
	}
	return n
}

// resolve returns the value at the path in doc, and whether there is one.
func resolve(doc any, path []segment) (any, bool) {
	for i := range path {
		switch v := doc.(type) {
		case map[string]any:
			x, ok := v[path[i].key]
			if !ok {
				return nil, false
			}
			doc = x
		case []any:
			n := path[i].index
			if n < 0 || n >= len(v) {
				return nil, false
			}
			doc = v[n]
		default:
			return nil, false
		}
	}
	return doc, true
}
