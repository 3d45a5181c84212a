package callback

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/kairos-sh/kairos/verify"
)

// Header names of the two signatures (package verify's), in canonical form
// so that they can be assigned to an http.Header without canonicalizing on
// every call.
const (
	headerID        = verify.HeaderID
	headerTimestamp = verify.HeaderTimestamp
	headerSignature = verify.HeaderSignature
	headerKairos    = verify.HeaderKairos
)

const (
	issuer   = verify.Issuer
	tokenTTL = 5 * time.Minute
	// jwtHeader is base64url(`{"alg":"HS256","typ":"JWT"}`).
	jwtHeader = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
)

var dot = []byte{'.'}

// NewSecret returns a new signing secret: "whsec_" followed by 32 random
// bytes in standard base64, the form Standard Webhooks libraries accept.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("new secret: %w", err)
	}
	return verify.SecretPrefix + base64.StdEncoding.EncodeToString(b[:]), nil
}

// Signature says what one callback attempt signs besides its body.
type Signature struct {
	MsgID      string    // webhook-id: stable across the retries of one job
	DeliveryID string    // jti of Kairos-Signature: unique per attempt
	URL        string    // sub of Kairos-Signature: the callback URL
	Timestamp  time.Time // signing time; zero means now
}

// Sign sets the Standard Webhooks headers (webhook-id, webhook-timestamp,
// webhook-signature) and Kairos-Signature, an HS256 JWT over the body hash, on
// h. Both are keyed by secret, a "whsec_..." string. Sign fails on a malformed
// secret and on a MsgID that is empty or not fit for a header; h is then
// left unchanged.
func Sign(h http.Header, secret string, sig Signature, body []byte) error {
	if sig.MsgID == "" || !headerSafe(sig.MsgID) {
		return fmt.Errorf("sign: message id %q is empty or not a plain header value", sig.MsgID)
	}
	km := macs.Get().(*keyedMAC)
	defer macs.Put(km)
	if km.mac == nil || km.secret != secret {
		key, err := verify.SecretKey(secret)
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		km.secret, km.mac = secret, hmac.New(sha256.New, key)
	}
	if sig.Timestamp.IsZero() {
		sig.Timestamp = time.Now()
	}
	ts := sig.Timestamp.Unix()
	mac := km.mac
	mac.Reset()
	var sum [sha256.Size]byte

	// Standard Webhooks: HMAC-SHA256 over "id.timestamp.body".
	var tsBuf [20]byte
	tsText := strconv.AppendInt(tsBuf[:0], ts, 10)
	mac.Write([]byte(sig.MsgID))
	mac.Write(dot)
	mac.Write(tsText)
	mac.Write(dot)
	mac.Write(body)
	whSig := make([]byte, 0, 3+base64.StdEncoding.EncodedLen(sha256.Size))
	whSig = append(whSig, "v1,"...)
	whSig = base64.StdEncoding.AppendEncode(whSig, mac.Sum(sum[:0]))

	// Kairos-Signature: a compact JWS built by hand, since its header never
	// changes and its claims are a fixed set.
	var claimsBuf [256]byte
	payload := appendClaims(claimsBuf[:0], sig, ts, body)
	enc := base64.RawURLEncoding
	tok := make([]byte, 0, len(jwtHeader)+2+enc.EncodedLen(len(payload))+enc.EncodedLen(sha256.Size))
	tok = append(tok, jwtHeader...)
	tok = append(tok, '.')
	tok = enc.AppendEncode(tok, payload)
	mac.Reset()
	mac.Write(tok)
	tok = append(tok, '.')
	tok = enc.AppendEncode(tok, mac.Sum(sum[:0]))

	vals := []string{sig.MsgID, string(tsText), string(whSig), string(tok)}
	h[headerID] = vals[0:1:1]
	h[headerTimestamp] = vals[1:2:2]
	h[headerSignature] = vals[2:3:3]
	h[headerKairos] = vals[3:4:4]
	return nil
}

// keyedMAC is an HMAC-SHA256 keyed by secret, kept for the next Sign with
// the same secret: keying one anew (the secret decoded, two SHA-256 states
// made and primed) was about half of Sign's allocations, and a process signs
// mostly with a handful of secrets.
type keyedMAC struct {
	secret string
	mac    hash.Hash
}

var macs = sync.Pool{New: func() any { return new(keyedMAC) }}

// appendClaims appends the JSON claims of Kairos-Signature: iss, sub, iat,
// nbf, exp, jti and body, the unpadded base64url SHA-256 of the body.
func appendClaims(dst []byte, sig Signature, ts int64, body []byte) []byte {
	dst = append(dst, `{"iss":"`+issuer+`","sub":`...)
	dst = appendJSONString(dst, sig.URL)
	dst = append(dst, `,"iat":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, `,"nbf":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, `,"exp":`...)
	dst = strconv.AppendInt(dst, ts+int64(tokenTTL/time.Second), 10)
	dst = append(dst, `,"jti":`...)
	dst = appendJSONString(dst, sig.DeliveryID)
	dst = append(dst, `,"body":"`...)
	sum := sha256.Sum256(body)
	dst = base64.RawURLEncoding.AppendEncode(dst, sum[:])
	return append(dst, `"}`...)
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < ' ':
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// headerSafe reports whether s arrives unchanged as a header value: no
// control characters and no surrounding white space, which receivers trim.
func headerSafe(s string) bool {
	if strings.TrimSpace(s) != s {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
