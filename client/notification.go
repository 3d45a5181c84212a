package client

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// Notification is the body kairos POSTs to a success URL (Type
// NoticeDelivered) and a failure URL (NoticeDead, NoticeExpired), signed
// like a callback: check it with package verify, then decode it with
// ParseNotification. Response is the receiver's answer to the last
// attempt, whole up to 64 KiB; Body decodes it.
type Notification struct {
	Type             string            `json:"type"`
	JobID            string            `json:"job_id"`
	Topic            string            `json:"topic"`
	Tenant           string            `json:"tenant"`
	Attempt          int               `json:"attempt"` // 0 for a job that ended without one
	Status           int               `json:"status"`  // 0 when the attempt got no answer
	ResponseHeaders  map[string]string `json:"response_headers"`
	Response         string            `json:"response"`
	ResponseEncoding string            `json:"response_encoding,omitempty"` // "base64" when the body is not UTF-8
	// Failure notifications only: "dead" or "expired", and the last
	// attempt's error.
	State string `json:"state,omitempty"`
	Error string `json:"error,omitempty"`
	// Failure notifications only, the fields they carried before the ones
	// above.
	Attempts    int                      `json:"attempts,omitempty"`
	DeadAt      *Time                    `json:"dead_at,omitempty"`
	LastAttempt *NotificationLastAttempt `json:"last_attempt,omitempty"`
	ExpiresAt   *Time                    `json:"expires_at,omitempty"`
}

// NotificationLastAttempt is a failure notification's last_attempt.
type NotificationLastAttempt struct {
	N          int     `json:"n"`
	At         Time    `json:"at"`
	Status     int     `json:"status,omitempty"`
	Error      string  `json:"error,omitempty"`
	Response   string  `json:"response,omitempty"`
	DurationMS float64 `json:"duration_ms"`
}

// The Type of a Notification.
const (
	NoticeDelivered = "job.delivered"
	NoticeDead      = "job.dead"
	NoticeExpired   = "job.expired"
)

// ParseNotification decodes a notification's body (after its signature
// was checked).
func ParseNotification(body []byte) (Notification, error) {
	var n Notification
	if err := json.Unmarshal(body, &n); err != nil {
		return Notification{}, fmt.Errorf("decode notification: %w", err)
	}
	if n.JobID == "" || n.Type == "" {
		return Notification{}, fmt.Errorf("decode notification: no job_id or type: not a kairos notification")
	}
	if _, err := n.Body(); err != nil {
		return Notification{}, err
	}
	return n, nil
}

// Body returns the receiver's answer the notification carries: Response
// as is, or base64-decoded when ResponseEncoding is "base64".
func (n Notification) Body() ([]byte, error) {
	switch n.ResponseEncoding {
	case "":
		return []byte(n.Response), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(n.Response)
		if err != nil {
			return nil, fmt.Errorf("decode notification response: %w", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("decode notification: unknown response_encoding %q (kairos sends none, or \"base64\")", n.ResponseEncoding)
}
