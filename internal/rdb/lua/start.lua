-- start.lua: a worker takes a popped job and starts an attempt.
-- KEYS[1] bucket, KEYS[2] job, KEYS[3] topic counters
-- ARGV[1] bucket member, ARGV[2] gen from the ready list, ARGV[3] now (ms),
-- ARGV[4] the topic's timeout (ms, used when the job sets none),
-- ARGV[5] lease margin (ms) added to the timeout, ARGV[6] now (RFC 3339)
-- A job popped with a stale gen, in another state, or gone (cancelled) is
-- dropped. An attempt that was started but never finished (its worker was
-- lost) is logged as such before the new one starts.
-- Reply: {} to drop, else {attempt, field1, value1, ...} (the whole job).
local v = redis.call('HMGET', KEYS[2], 'st', 'g', 'a', 'to', 'ao', 'log')
if v[1] ~= 'ready' or v[2] ~= ARGV[2] then
  return {}
end
local now = tonumber(ARGV[3])
local n = tonumber(v[3]) + 1
if v[5] == '0' and n > 1 then
  local log = cjson.decode(v[6] or '[]')
  log[#log + 1] = {n = n - 1, at = ARGV[6], error = 'worker lost: its lease expired before the attempt finished'}
  while #log > 10 do
    table.remove(log, 1)
  end
  redis.call('HSET', KEYS[2], 'log', cjson.encode(log))
end
local timeout = tonumber(v[4] or '0')
if timeout == 0 then
  timeout = tonumber(ARGV[4])
end
redis.call('HSET', KEYS[2], 'st', 'active', 'a', n, 'ao', 0)
redis.call('ZADD', KEYS[1], now + timeout + tonumber(ARGV[5]), ARGV[1])
redis.call('HINCRBY', KEYS[3], 'ready', -1)
redis.call('HINCRBY', KEYS[3], 'active', 1)
local out = redis.call('HGETALL', KEYS[2])
table.insert(out, 1, n)
return out
