package kairos

import (
	"testing"
	"time"
)

func TestOccurrenceIDs(t *testing.T) {
	at := time.UnixMilli(1795420800250)
	id := OccurrenceID("daily@eu", at)
	if sid, got, ok := ParseOccurrence(id); !ok || sid != "daily@eu" || !got.Equal(at) {
		t.Errorf("ParseOccurrence(%q) = %q %v %v", id, sid, got, ok)
	}
	for _, id := range []string{"daily", "@123", "daily@", "daily@12a", "a@1@x"} {
		if _, ok := ScheduleOf(id); ok {
			t.Errorf("ScheduleOf(%q) says it is an occurrence", id)
		}
		if _, _, ok := ParseOccurrence(id); ok {
			t.Errorf("ParseOccurrence(%q) accepted it", id)
		}
	}
	// Reserved for occurrences, though no instant fits: still not a free id.
	if _, ok := ScheduleOf("x@99999999999999999999"); !ok {
		t.Error("an all-digit suffix past int64 is not reserved")
	}
	if _, _, ok := ParseOccurrence("x@99999999999999999999"); ok {
		t.Error("ParseOccurrence accepted an instant past int64")
	}
}
