-- release.lua: give back a job claimed by this process that it will not
-- start (it is stopping, or the job waited too long for a free worker): it
-- keeps its place (its due time) and loses no attempt.
-- KEYS[1] the shard's pool, KEYS[2] the shard's wheel (due)
-- ARGV[1] the shard's key tag, ARGV[2] the topic's handle, ARGV[3] id,
-- ARGV[4] the attempt it was claimed for, ARGV[5] its due time (ms),
-- ARGV[6] now (ms), ARGV[7] wake horizon (ms): a job given back to wait
-- for a later time (flow control) wakes a scanner that sleeps past it
-- Reply: {R.ok, earliest} released, or {R.not_found} when the claim is no
-- longer this process's (its lease lapsed, or the job is gone).
local pool, due, tag, h, id = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
local field = h .. '/' .. id
local r = parse(redis.call('HGET', pool, field))
if not r or r.st ~= ST.active or r.n ~= tonumber(ARGV[4]) then
  return {R.not_found}
end
local now = tonumber(ARGV[6])
r.n = r.n - 1
r.nx = tonumber(ARGV[5])
r.st = waiting(r.nx, now)
local first = fresh(r) -- given back its first attempt since created or replayed
if not first and r.st == ST.scheduled then
  r.st = ST.retrying
end
wheelPut(field, r.nx, now)
redis.call('HSET', pool, field, format(r))
if first and scheduleOf(id) then
  count(h, OCC .. 'active>' .. NAME[r.st]) -- an occurrence that did not fire after all
else
  count(h, 'active>' .. NAME[r.st])
end
countFlush(tag)
return {R.ok, earliestOf(due, wheelFlush(tag, due), now + tonumber(ARGV[7]))}
