-- enqueue.lua: create a job, or replace one that has not fired yet.
-- KEYS[1] bucket (ZSET), KEYS[2] job (HASH), KEYS[3] topic index (ZSET),
-- KEYS[4] topic counters (HASH), KEYS[5] topic dead letters (ZSET)
-- ARGV[1] bucket member "tenant/topic/id", ARGV[2] id, ARGV[3] now (ms), or
-- "" to read Redis's TIME (whether a job is due is decided on Redis's clock),
-- ARGV[4] run_at (ms), ARGV[5] uid for a new job, ARGV[6] ready lease (ms),
-- ARGV[7..] job fields as field, value pairs
-- Reply: {-1} when the job is being delivered right now, else
-- {1, gen, pushed, earliest, uid, created}: pushed=1 when the job is due now and the
-- caller must push "id|gen" onto the ready list; earliest=1 when it became
-- the shard's earliest member, so a sleeping scanner must be woken.
local member, id = ARGV[1], ARGV[2]
local now, runAt = tonumber(ARGV[3]), tonumber(ARGV[4])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local old = redis.call('HMGET', KEYS[2], 'st', 'g', 'uid', 'ca')
local st, gen, uid, created = old[1], tonumber(old[2] or '0') + 1, ARGV[5], now
if st == 'active' then
  return {-1}
end
if st then
  if st ~= 'delivered' then
    redis.call('HINCRBY', KEYS[4], st, -1)
  end
  if st == 'dead' then
    redis.call('ZREM', KEYS[5], id)
  elseif st ~= 'delivered' then
    -- not fired yet: the same job, rescheduled; it keeps its identity
    uid, created = old[3], tonumber(old[4])
  end
  redis.call('DEL', KEYS[2])
end
local state, score, pushed = 'scheduled', runAt, 0
if runAt <= now then
  state, score, pushed = 'ready', now + tonumber(ARGV[6]), 1
end
local fields = {'st', state, 'g', gen, 'a', 0, 'ra', runAt, 'na', runAt, 'ca', created, 'uid', uid}
for i = 7, #ARGV do
  fields[#fields + 1] = ARGV[i]
end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('ZADD', KEYS[1], score, member)
redis.call('ZADD', KEYS[3], created, id)
redis.call('HINCRBY', KEYS[4], state, 1)
local earliest = 0
if pushed == 0 then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0)
  if first[1] == member then
    earliest = 1
  end
end
return {1, gen, pushed, earliest, uid, created}
