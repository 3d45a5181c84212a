-- finish.lua: record an attempt's outcome.
-- KEYS[1] bucket, KEYS[2] job, KEYS[3] topic counters, KEYS[4] dead letters,
-- KEYS[5] the shard's expiring set (delivered jobs by record expiry),
-- KEYS[6] the tenant's dead letters, KEYS[7] every tenant's dead letters
-- ARGV[1] bucket member, ARGV[2] id, ARGV[3] attempt number, ARGV[4] now (ms),
-- ARGV[5] outcome: "ok", "retry" or "dead", ARGV[6] attempt record (JSON),
-- ARGV[7] next run (ms, for retry), ARGV[8] delivered retention (seconds)
-- An outcome from a stale attempt (its lease expired and the job was handed
-- out again) changes nothing.
-- Reply: 0 stale, 1 delivered, 2 retrying, 3 dead
local v = redis.call('HMGET', KEYS[2], 'st', 'a', 'ca', unpack(LOG_FIELDS))
if v[1] ~= 'active' or v[2] ~= ARGV[3] then
  return 0
end
local now = tonumber(ARGV[4])
local pieces = {}
for i, f in ipairs(LOG_FIELDS) do
  pieces[f] = v[i + 3]
end
local log, had = readLog(function(f) return pieces[f] end)
log[#log + 1] = cjson.decode(ARGV[6])
while #log > 10 do
  table.remove(log, 1)
end
local lf, stale = logFields(log, had)
if #stale > 0 then
  redis.call('HDEL', KEYS[2], unpack(stale))
end
local outcome, reply = ARGV[5], 0
if outcome == 'ok' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HSET', KEYS[2], 'st', 'delivered', 'ao', 1, 'fa', now, 'na', '', unpack(lf))
  redis.call('EXPIRE', KEYS[2], tonumber(ARGV[8]))
  -- its listing entry goes when the record has expired (5s margin); the
  -- member carries the creation time that finds the entry
  redis.call('ZADD', KEYS[5], now + (tonumber(ARGV[8]) + 5) * 1000, ARGV[1] .. ' ' .. (v[3] or ''))
  redis.call('HINCRBY', KEYS[3], 'active>delivered', 1)
  reply = 1
elseif outcome == 'retry' then
  redis.call('ZADD', KEYS[1], ARGV[7], ARGV[1])
  redis.call('HSET', KEYS[2], 'st', 'retrying', 'ao', 1, 'na', ARGV[7], unpack(lf))
  redis.call('HINCRBY', KEYS[3], 'active>retrying', 1)
  reply = 2
else
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[4], now, ARGV[2])
  redis.call('ZADD', KEYS[6], now, ARGV[1])
  redis.call('ZADD', KEYS[7], now, ARGV[1])
  redis.call('HSET', KEYS[2], 'st', 'dead', 'ao', 1, 'fa', now, 'na', '', unpack(lf))
  redis.call('HINCRBY', KEYS[3], 'active>dead', 1)
  reply = 3
end
return reply
