package kvconf

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Decode copies the keys of a section into the fields of the struct pointed to by v. A field is matched by its
// `kv:"name"` tag, or by its name lower-cased. Supported field types: string, bool, all int and uint kinds,
// float64, time.Duration and []string (comma-separated). Keys without a matching field are ignored; use
// `kv:"name,required"` to make a key mandatory.
func Decode(s *Section, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("kvconf: Decode wants a pointer to a struct, got %T", v)
	}
	rv = rv.Elem()
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		field := rt.Field(i)
		if !field.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(field.Tag.Get("kv"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(field.Name)
		}
		raw, ok := s.Get(name)
		if !ok {
			if opts == "required" {
				return fmt.Errorf("kvconf: [%s] required key %q is missing", s.Name, name)
			}
			continue
		}
		if err := setField(rv.Field(i), raw); err != nil {
			return &TypeError{Section: s.Name, Key: name, Value: raw, Want: err.Error()}
		}
	}
	return nil
}

var durationType = reflect.TypeOf(time.Duration(0))

func setField(f reflect.Value, raw string) error {
	if f.Type() == durationType {
		d, err := time.ParseDuration(raw)
		if err != nil {
			return fmt.Errorf("duration")
		}
		f.SetInt(int64(d))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("boolean")
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, f.Type().Bits())
		if err != nil {
			return fmt.Errorf("integer")
		}
		f.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(raw, 10, f.Type().Bits())
		if err != nil {
			return fmt.Errorf("unsigned integer")
		}
		f.SetUint(n)
	case reflect.Float64, reflect.Float32:
		x, err := strconv.ParseFloat(raw, f.Type().Bits())
		if err != nil {
			return fmt.Errorf("number")
		}
		f.SetFloat(x)
	case reflect.Slice:
		if f.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("supported type (slices must be []string)")
		}
		var items []string
		for _, it := range strings.Split(raw, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		f.Set(reflect.ValueOf(items))
	default:
		return fmt.Errorf("supported type (%s)", f.Type())
	}
	return nil
}
