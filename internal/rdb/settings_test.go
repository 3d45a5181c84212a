package rdb

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestSettingsEmptySeesEveryField: each field of settings, set on its own,
// makes the settings non-empty and reaches the stored JSON, so a field
// added to settings is never dropped by a check that forgot it.
func TestSettingsEmptySeesEveryField(t *testing.T) {
	if !(settings{}).empty() || !(settings{Headers: map[string]string{}, Labels: map[string]string{}}).empty() {
		t.Fatal("zero settings (or empty maps) are not empty")
	}
	typ := reflect.TypeFor[settings]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			var s settings
			v := reflect.ValueOf(&s).Elem().Field(i)
			switch v.Kind() {
			case reflect.String:
				v.SetString("x")
			case reflect.Int, reflect.Int64:
				v.SetInt(1)
			case reflect.Map:
				v.Set(reflect.ValueOf(map[string]string{"k": "v"}))
			default:
				t.Fatalf("field %s of kind %s: teach this test to set it", f.Name, v.Kind())
			}
			if s.empty() {
				t.Errorf("settings with only %s set count as empty: the job would lose it", f.Name)
			}
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) == "{}" {
				t.Errorf("settings with only %s set encode as {}", f.Name)
			}
		})
	}
}
