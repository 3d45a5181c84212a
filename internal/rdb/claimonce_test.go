package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/kairos-sh/kairos"
)

// TestClaimRepeatedWithItsTokenHandsOutItsJobsAgain: a claim whose reply
// was lost, repeated with its token, gets the same jobs in the same
// attempt and claims nothing new; once a job's outcome is applied, the
// repeat no longer hands it out.
func TestClaimRepeatedWithItsTokenHandsOutItsJobsAgain(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, Options{})
	ctx := context.Background()
	enqueue(t, s, "a", clk.Now())
	sh := s.k.shardOf(key("a"))
	tok := NewClaimToken()
	first, err := s.ClaimDueOnce(ctx, tok, sh, 10, 0, 5*time.Second)
	if err != nil || len(first.Jobs) != 1 {
		t.Fatalf("first claim: %v, %+v", err, first.Jobs)
	}
	enqueue(t, s, "b", clk.Now()) // due now too, if b lands in a's shard
	tok.Repeat = true
	again, err := s.ClaimDueOnce(ctx, tok, sh, 10, 0, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Jobs) != 1 || again.Jobs[0].Job.ID != "a" || again.Jobs[0].Job.Attempts != 1 || !again.Jobs[0].Due.Equal(first.Jobs[0].Due) {
		t.Fatalf("repeat: %+v, want job a again in attempt 1, due %v", again.Jobs, first.Jobs[0].Due)
	}
	if _, err := s.Finish(ctx, key("a"), kairos.Attempt{N: 1, At: clk.Now()}, true, false, time.Time{}); err != nil {
		t.Fatal(err)
	}
	again, err = s.ClaimDueOnce(ctx, tok, sh, 10, 0, 5*time.Second)
	if err != nil || len(again.Jobs) != 0 {
		t.Fatalf("repeat after a's outcome: %v, %+v; want nothing", err, again.Jobs)
	}
	if ttl := s.c.PTTL(ctx, s.k.tag(sh)+"ct:"+tok.ID).Val(); ttl <= 0 || ttl > ClaimTokenTTL {
		t.Errorf("the token's key expires in %v, want within %v", ttl, ClaimTokenTTL)
	}
}

// TestLostClaimRunLateClaimsNothing: when the repeat of a claim reaches
// Redis before the lost call itself, the lost call, run late, claims
// nothing: no job is stranded by a claim whose reply nobody reads.
func TestLostClaimRunLateClaimsNothing(t *testing.T) {
	t.Parallel()
	s, clk := newStore(t, Options{})
	ctx := context.Background()
	enqueue(t, s, "a", clk.Now())
	sh := s.k.shardOf(key("a"))
	tok := NewClaimToken()
	repeat := tok
	repeat.Repeat = true
	if c, err := s.ClaimDueOnce(ctx, repeat, sh, 0, 0, 5*time.Second); err != nil || len(c.Jobs) != 0 {
		t.Fatalf("repeat with limit 0: %v, %+v", err, c.Jobs)
	}
	if c, err := s.ClaimDueOnce(ctx, tok, sh, 10, 0, 5*time.Second); err != nil || len(c.Jobs) != 0 {
		t.Fatalf("the lost call run late: %v, %+v; want nothing claimed", err, c.Jobs)
	}
	claimOne(t, s, "a") // still there for the next claim
}
