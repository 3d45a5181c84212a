package api

import (
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/kairos-sh/kairos"
)

// labelKeyRule says what a label key may be, for error messages.
const labelKeyRule = "1-32 characters of a-z, 0-9, '_', '.' and '-'"

// checkLabels validates a job's or schedule's labels: at most
// kairos.MaxLabels, each key by labelKeyRule, each value at most
// kairos.MaxLabelValue characters of UTF-8 text. nil for none.
func checkLabels(fe *fieldErrors, name string, labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return nil
	}
	if len(labels) > kairos.MaxLabels {
		fe.add(name, "%d labels; at most %d are allowed", len(labels), kairos.MaxLabels)
		return nil
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys) // errors in a stable order
	for _, k := range keys {
		if !kairos.ValidLabelKey(k) {
			fe.add(name, "%q is not a label key: use %s", k, labelKeyRule)
			continue
		}
		checkLabelValue(fe, name+"."+k, labels[k])
	}
	return labels
}

// checkLabelValue validates a label's value.
func checkLabelValue(fe *fieldErrors, name, v string) {
	if !utf8.ValidString(v) || utf8.RuneCountInString(v) > kairos.MaxLabelValue {
		fe.add(name, "a label value is up to %d characters of UTF-8 text", kairos.MaxLabelValue)
	}
}

// parseLabelQuery reads a listing's label parameters, each "key:value";
// all of them must match. nil when there are none.
func parseLabelQuery(fe *fieldErrors, values []string) map[string]string {
	if len(values) == 0 {
		return nil
	}
	if len(values) > kairos.MaxLabels {
		fe.add("label", "%d labels; a filter takes at most %d", len(values), kairos.MaxLabels)
		return nil
	}
	out := make(map[string]string, len(values))
	for _, v := range values {
		k, val, ok := strings.Cut(v, ":")
		switch {
		case !ok:
			fe.add("label", "%q is not key:value (a label key, a colon, its value)", v)
		case !kairos.ValidLabelKey(k):
			fe.add("label", "%q is not a label key: use %s", k, labelKeyRule)
		default:
			if old, dup := out[k]; dup && old != val {
				fe.add("label", "key %q is given twice with different values: no job could match", k)
				continue
			}
			checkLabelValue(fe, "label", val)
			out[k] = val
		}
	}
	return out
}
