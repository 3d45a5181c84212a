-- start.lua: a worker takes a popped job and starts an attempt.
-- KEYS[1] bucket, KEYS[2] job, KEYS[3] topic counters
-- ARGV[1] bucket member, ARGV[2] gen from the ready list, ARGV[3] now (ms),
-- ARGV[4] the topic's timeout (ms, used when the job sets none),
-- ARGV[5] lease margin (ms) added to the timeout
-- A job popped with a stale gen, in another state, or gone (cancelled) is
-- dropped. An attempt that was started but never finished (its worker was
-- lost) is logged as such before the new one starts.
-- Reply: {} to drop, else {attempt, field1, value1, ...} (the whole job).
local flat = redis.call('HGETALL', KEYS[2])
local h = {}
for i = 1, #flat, 2 do
  h[flat[i]] = flat[i + 1]
end
if h.st ~= 'ready' or (h.g or '1') ~= ARGV[2] then -- generation 1 has no 'g'
  return {}
end
local now = tonumber(ARGV[3])
local n = tonumber(h.a or '0') + 1
local fields = {'st', 'active', 'a', tostring(n), 'ao', '0'}
if h.ao == '0' and n > 1 then
  local log, had = readLog(function(f) return h[f] end)
  log[#log + 1] = {n = n - 1, t = now, error = 'worker lost: its lease expired before the attempt finished'}
  while #log > 10 do
    table.remove(log, 1)
  end
  local lf, stale = logFields(log, had)
  for _, x in ipairs(lf) do
    fields[#fields + 1] = x
  end
  if #stale > 0 then
    redis.call('HDEL', KEYS[2], unpack(stale))
    for _, f in ipairs(stale) do
      h[f] = nil
    end
  end
end
local timeout = tonumber(h.to or '0')
if timeout == 0 then
  timeout = tonumber(ARGV[4])
end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('ZADD', KEYS[1], now + timeout + tonumber(ARGV[5]), ARGV[1])
redis.call('HINCRBY', KEYS[3], 'ready>active', 1)
-- the job as now stored
for i = 1, #fields, 2 do
  h[fields[i]] = fields[i + 1]
end
local out = {n}
for k, v in pairs(h) do
  out[#out + 1] = k
  out[#out + 1] = v
end
return out
