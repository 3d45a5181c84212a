package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/kairos-sh/kairos"
)

// jobTopic reads the topic that jobs are created in; known is false for
// one not registered yet (t then holds only its tenant and name).
func (s *Server) jobTopic(ctx context.Context, tenant, topic string) (t kairos.Topic, known bool, err error) {
	t, err = s.store.GetTopic(ctx, tenant, topic)
	if errors.Is(err, kairos.ErrNotFound) {
		return kairos.Topic{Tenant: tenant, Name: topic}, false, nil
	}
	return t, err == nil, err
}

// needCallback refuses a job that names no callback URL when its topic has
// none either: the one rule of single and batch creates.
func needCallback(t kairos.Topic, known bool, j kairos.Job) error {
	var msg string
	switch {
	case j.CallbackURL != "" || (known && t.CallbackURL != ""):
		return nil
	case !known:
		msg = fmt.Sprintf("topic %q has no callback URL registered and the job names none: register one with PUT /v1/topics/%s {\"callback_url\": \"https://...\"} or give callback_url", t.Name, t.Name)
	default:
		msg = fmt.Sprintf("topic %q has no callback URL and the job names none: set one with PUT /v1/topics/%s or give callback_url", t.Name, t.Name)
	}
	return &ValidationError{Errors: []FieldError{{Field: "callback_url", Message: msg}}}
}

// ensureTopic registers a topic that jobs naming their own callback URL
// were created in, so that workers consume it.
func (s *Server) ensureTopic(ctx context.Context, t kairos.Topic, known bool) error {
	if known {
		return nil
	}
	return s.store.EnsureTopic(ctx, t.Tenant, t.Name)
}
