-- unpark.lua: resume a paused topic in one shard, a batch of parked
-- entries at a time (Store.PauseTopic).
-- KEYS[1] the shard's pool, KEYS[2] its wheel (due), KEYS[3] its park set
-- (paused topics), KEYS[4] the topic's parked list in the shard
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the shard's key
-- tag, ARGV[3] the topic's handle, ARGV[4] most entries to file again,
-- ARGV[5] wake horizon (ms)
-- Each parked entry whose job still waits at that time (not cancelled,
-- rescheduled or replaced since) goes back to the wheel at its own time:
-- past slots are claimed first, oldest first. The topic leaves the park
-- set with the call that empties its parked list, so jobs parked meanwhile
-- are filed again too, and none fires before the older ones are filed.
-- Reply: {1 when the topic is resumed in the shard (else call again),
-- earliest}
local pool, due, parkSet, list = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = clock(ARGV[1])
local tag, h, most = ARGV[2], ARGV[3], tonumber(ARGV[4])
local es = redis.call('LPOP', list, most) or {}
if #es > 0 then
  local fields, times = {}, {}
  for i, e in ipairs(es) do
    local field, t = string.match(e, '^(.*),(%w*)$')
    fields[i], times[i] = field, num(t)
  end
  local vs = redis.call('HMGET', pool, unpack(fields))
  for i, field in ipairs(fields) do
    local r = parse(vs[i])
    if r and r.nx == times[i] and (r.st == ST.scheduled or r.st == ST.ready or r.st == ST.retrying) then
      wheelPut(field, times[i], now)
    end
  end
end
local done = 0
if #es < most then
  redis.call('SREM', parkSet, h)
  done = 1
end
return {done, earliestOf(due, wheelFlush(tag, due), now + tonumber(ARGV[5]))}
