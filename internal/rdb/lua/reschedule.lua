-- reschedule.lua: move a job that has not fired, or waits to retry, to a
-- new time; it keeps its attempts. A schedule's pending occurrence moved
-- leaves its schedule, as a trigger's does: the schedule's next instant
-- becomes pending (skipPending), and the moved one fires once at its new
-- time.
-- KEYS[1] the shard's pool, KEYS[2] the shard's wheel (due), KEYS[3] its
-- schedules, KEYS[4] its refill set
-- ARGV[1] the shard's key tag, ARGV[2] the topic's handle, ARGV[3] id,
-- ARGV[4] run_at (ms), ARGV[5] now (ms), ARGV[6] wake horizon (ms)
-- Reply: {R.not_found}, {R.active}, {R.delivered}, {R.dead} (replay it
-- instead), {R.cancelled}, or {R.ok, earliest, record} with the job as now
-- stored.
local pool, due, tag, h, id = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
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
if r.st == ST.dead or r.st == ST.expired then -- replay it instead
  return {R.dead}
end
if r.st == ST.cancelled then
  return {R.cancelled}
end
local now = tonumber(ARGV[5])
skipPending(tag, pool, KEYS[3], KEYS[4], h, id, r, now)
-- it keeps its attempts: a retrying job stays retrying, its next attempt
-- going on from its last (with what is left of its max_attempts)
local was = r.st
local runAt = tonumber(ARGV[4])
r.ra, r.nx = runAt, runAt
if was ~= ST.retrying then
  r.st = waiting(r.nx, now)
end
if was ~= r.st then
  count(h, NAME[was] .. '>' .. NAME[r.st])
end
wheelPut(field, r.nx, now)
local v = format(r)
redis.call('HSET', pool, field, v)
indexFlush(tag)
countFlush(tag)
return {R.ok, earliestOf(due, wheelFlush(tag, due), now + tonumber(ARGV[6])), v}
