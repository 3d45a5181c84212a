-- finish.lua: record an attempt's outcome.
-- KEYS[1] the shard's pool, KEYS[2] the shard's wheel (due)
-- ARGV[1] the shard's key tag, ARGV[2] the topic's handle, ARGV[3] id,
-- ARGV[4] attempt number, ARGV[5] now (ms), ARGV[6] outcome (OUT.delivered,
-- OUT.retrying or OUT.dead), ARGV[7] the attempt's log line (JSON and a
-- newline), ARGV[8] next run (ms, for a retry), ARGV[9] how long a
-- delivered job stays readable (ms; unused: the claim files the expiry),
-- ARGV[10] wake horizon (ms), ARGV[11] tenant
-- An outcome from a stale attempt (its lease lapsed and the job was handed
-- out again, or it was cancelled) changes nothing.
-- Reply: {outcome, earliest}: OUT.stale or the outcome recorded; earliest
-- as in enqueue.lua, for a retry.
local pool, due, tag, h, id = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
local field = h .. '/' .. id
local r = parse(redis.call('HGET', pool, field))
if not r or r.st ~= ST.active or r.n ~= tonumber(ARGV[4]) then
  return {OUT.stale, false}
end
local now, outcome = tonumber(ARGV[5]), tonumber(ARGV[6])
addLog(r, ARGV[7])
if outcome == OUT.delivered then
  -- nx stays the lease's expiry: the claim that processes the lease's
  -- entry files the record's expiry then, in a batch, rather than here
  r.st, r.fa = ST.delivered, now
  count(h, 'active>delivered')
elseif outcome == OUT.retrying then
  r.st, r.nx = ST.retrying, tonumber(ARGV[8])
  wheelPut(field, r.nx, now)
  count(h, 'active>retrying')
else
  r.st, r.fa, r.nx = ST.dead, now, 0
  deadAdd(tag, ARGV[11], h, id, now)
  count(h, 'active>dead')
end
redis.call('HSET', pool, field, format(r))
countFlush(tag)
local soonest = wheelFlush(tag, due)
local earliest = false
if outcome == OUT.retrying then
  earliest = earliestOf(due, soonest, now + tonumber(ARGV[10]))
end
return {outcome, earliest}
