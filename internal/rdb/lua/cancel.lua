-- cancel.lua: remove a job that has not been delivered; a dead job is
-- discarded. Its wheel entries go stale and are skipped. Cancelling a
-- schedule's pending occurrence skips it: the schedule's next instant
-- becomes pending (skipPending).
-- KEYS[1] the shard's pool, KEYS[2] its wheel (due), KEYS[3] its
-- schedules, KEYS[4] its refill set
-- ARGV[1] the shard's key tag, ARGV[2] the topic's handle, ARGV[3] id,
-- ARGV[4] tenant, ARGV[5] now (ms), or '' to read Redis's TIME, ARGV[6]
-- wake horizon (ms)
-- Reply: {R.ok, earliest} removed, or {R.not_found}, {R.active} (being
-- delivered now) or {R.delivered} (already delivered)
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
local now = clock(ARGV[5])
unindex(tag, h, id, r.ca)
if r.st == ST.dead then
  deadRemove(tag, ARGV[4], h, id)
end
labelRemRecord(tag, h, id, r)
redis.call('HDEL', pool, field)
count(h, NAME[r.st], -1)
skipPending(tag, pool, KEYS[3], KEYS[4], h, id, r, now)
indexFlush(tag)
countFlush(tag)
return {R.ok, earliestOf(KEYS[2], wheelFlush(tag, KEYS[2]), now + tonumber(ARGV[6]))}
