package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// strictKeys refuses object keys that are not exactly a field's JSON name.
// encoding/json matches keys case-insensitively ({"DELAY": "1m"} would set
// delay) and reports a nested unknown field without its path; this walks
// the body against dst's type first, so that every unknown key is refused
// and named in full (backoff.bogus).
func strictKeys(body []byte, typ reflect.Type, prefix string) *FieldError {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return nil
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil // not an object: the decoder reports the type error
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil // the decoder reports it
	}
	fields := make(map[string]reflect.Type, typ.NumField())
	jsonFields(typ, fields)
	for key, raw := range obj {
		ft, ok := fields[key]
		if !ok {
			field := prefix + key
			if key == "" {
				field = strings.TrimSuffix(prefix, ".")
				if field == "" {
					field = "body"
				}
				return &FieldError{Field: field, Message: "unknown field \"\" (an empty key)"}
			}
			msg := "unknown field"
			for name := range fields {
				if strings.EqualFold(name, key) {
					msg = "unknown field: names are case-sensitive; did you mean " + name + "?"
				}
			}
			return &FieldError{Field: field, Message: msg}
		}
		if fe := strictKeys(raw, ft, prefix+key+"."); fe != nil {
			return fe
		}
	}
	return nil
}

// jsonFields adds the fields of struct type typ to fields by JSON name,
// those of an embedded struct without a name of its own (CallbackSettings)
// as typ's own, as encoding/json reads them.
func jsonFields(typ reflect.Type, fields map[string]reflect.Type) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct:
			jsonFields(f.Type, fields)
		case name != "" && name != "-":
			fields[name] = f.Type
		}
	}
}
