-- cancel.lua: cancel a job that has not been delivered: it becomes
-- cancelled and keeps its record, history included, for the retention
-- period, as a delivered job does (an entry at its record's expiry, which
-- the claim that processes it deletes; nothing sweeps). It stays in the
-- listing and label indexes until then; a dead job leaves the dead
-- letters. Its earlier wheel entries go stale and are skipped. Cancelling
-- a schedule's pending occurrence skips it: the schedule's next instant
-- becomes pending (skipPending). A job already cancelled stays as it is.
-- KEYS[1] the shard's pool, KEYS[2] its wheel (due), KEYS[3] its
-- schedules, KEYS[4] its refill set
-- ARGV[1] the shard's key tag, ARGV[2] the topic's handle, ARGV[3] id,
-- ARGV[4] tenant, ARGV[5] now (ms), or '' to read Redis's TIME, ARGV[6]
-- wake horizon (ms), ARGV[7] how long it stays readable (ms)
-- Reply: {R.ok, earliest, was} cancelled now (earliest: the due time to
-- wake the scanner for, or false; was: the state's name it had),
-- {R.ok, false} when it was cancelled already, or {R.not_found},
-- {R.active} (being delivered now) or {R.delivered} (already delivered)
local pool, tag, h, id = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
local field = h .. '/' .. id
local r = parse(redis.call('HGET', pool, field))
if not r then
  return {R.not_found}
end
if r.st == ST.active then
  return {R.active}
end
if r.st == ST.delivered then
  return {R.delivered}
end
if r.st == ST.cancelled then
  return {R.ok, false}
end
local now = clock(ARGV[5])
if r.st == ST.dead then
  deadRemove(tag, ARGV[4], h, id)
end
local was = r.st
r.st, r.fa, r.nx = ST.cancelled, now, now + tonumber(ARGV[7])
redis.call('HSET', pool, field, format(r))
wheelPut(field, r.nx, now)
count(h, NAME[was] .. '>' .. NAME[ST.cancelled])
skipPending(tag, pool, KEYS[3], KEYS[4], h, id, r, now)
indexFlush(tag)
countFlush(tag)
return {R.ok, earliestOf(KEYS[2], wheelFlush(tag, KEYS[2]), now + tonumber(ARGV[6])), NAME[was]}
