package filter

import (
	"bytes"
	"encoding/json"
)

// encode writes the filter's canonical encoding.
func (f *Filter) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// put writes v without the newline Encode ends it with.
	put := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
		return nil
	}
	var filter func(f *Filter) error
	filter = func(f *Filter) error {
		buf.WriteByte('{')
		for i, c := range f.clauses {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := put(c.key); err != nil {
				return err
			}
			buf.WriteByte(':')
			switch {
			case c.kind != clausePath:
				buf.WriteByte('[')
				for j, sub := range c.subs {
					if j > 0 {
						buf.WriteByte(',')
					}
					if err := filter(sub); err != nil {
						return err
					}
				}
				buf.WriteByte(']')
			case c.lit:
				if err := put(c.ops[0].arg); err != nil {
					return err
				}
			default:
				buf.WriteByte('{')
				for j, o := range c.ops {
					if j > 0 {
						buf.WriteByte(',')
					}
					buf.WriteString(`"` + opNames[o.kind] + `":`)
					if err := put(o.arg); err != nil {
						return err
					}
				}
				buf.WriteByte('}')
			}
		}
		buf.WriteByte('}')
		return nil
	}
	if f == nil {
		f = &Filter{}
	}
	if err := filter(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
