package rdb

import (
	"crypto/sha256"
	"encoding/base32"
	"strconv"

	"github.com/kairos-sh/kairos"
)

// uidEncoding is lower-case base32: 15 bytes make 24 characters.
var uidEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// webhookID returns the webhook-id of the job of key created at createdMS:
// the same for every attempt of that job, another for a job created again
// under the same id (the enqueue script gives it a later creation time), and
// another in a deployment of another salt. It is derived rather than stored:
// about 48 bytes less per job in Redis.
func (s *Store) webhookID(key kairos.JobKey, createdMS int64) string {
	var buf [160]byte
	in := append(buf[:0], s.idSalt...)
	for _, p := range []string{key.Tenant, key.Topic, key.ID} {
		in = append(append(in, 0), p...)
	}
	sum := sha256.Sum256(strconv.AppendInt(append(in, 0), createdMS, 10))
	var out [4 + 24]byte
	copy(out[:], "msg_")
	uidEncoding.Encode(out[4:], sum[:15])
	return string(out[:])
}
