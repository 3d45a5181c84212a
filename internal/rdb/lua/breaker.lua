-- breaker.lua: record an attempt's answer in its flow's circuit breaker
-- (Store.BreakerAnswer). The breaker is a HASH: st (c closed, o open, h
-- half-open), f (failed attempts in a row while closed), c (the current
-- cool-down, ms), u (open until, ms), p and pd (the probe's attempt and
-- when its lease lapses: flowgate.lua sends it).
-- KEYS[1] the breaker
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] 1 delivered, 0
-- failed, ARGV[3] the attempt "<tenant>/<topic>/<id>#<attempt>", ARGV[4]
-- failures in a row that open it, ARGV[5] its first cool-down (ms),
-- ARGV[6] the longest cool-down (ms)
-- A delivery closes it (whoever made it: the receiver answers). A failure
-- while closed counts; the threshold-th in a row opens it for the first
-- cool-down. The probe's failure opens it again for twice the last
-- cool-down, at most the longest. Other failures while open or half-open
-- (attempts started before it opened) change nothing.
-- Reply: {state, open until (ms), 1 when this answer moved the breaker
-- (opened it, opened it again, closed it from open or half-open) else 0}
local b = KEYS[1]
local now = clock(ARGV[1])
local ok, m = ARGV[2] == '1', ARGV[3]
local threshold, base, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local v = redis.call('HMGET', b, BRK.state, BRK.fails, BRK.cool, BRK.openUntil, BRK.probe)
local st, f, cool, openUntil, probe = v[1] or BRK_ST.closed, tonumber(v[2] or '0'), tonumber(v[3] or '0'), tonumber(v[4] or '0'), v[5]
if ok then
  if st ~= BRK_ST.closed or f > 0 then
    redis.call('DEL', b)
  end
  return {BRK_ST.closed, 0, st ~= BRK_ST.closed and 1 or 0}
end
if st == BRK_ST.closed then
  f = f + 1
  if f < threshold then
    redis.call('HSET', b, BRK.state, BRK_ST.closed, BRK.fails, f)
    return {BRK_ST.closed, 0, 0}
  end
  openUntil = now + base
  redis.call('HSET', b, BRK.state, BRK_ST.open, BRK.fails, 0, BRK.cool, base, BRK.openUntil, openUntil)
  redis.call('HDEL', b, BRK.probe, BRK.probeEnd)
  return {BRK_ST.open, openUntil, 1}
end
if probe == m then -- the probe failed: open again, for longer
  cool = math.min(math.max(cool, base) * 2, math.max(cap, base))
  openUntil = now + cool
  redis.call('HSET', b, BRK.state, BRK_ST.open, BRK.cool, cool, BRK.openUntil, openUntil)
  redis.call('HDEL', b, BRK.probe, BRK.probeEnd)
  return {BRK_ST.open, openUntil, 1}
end
return {st, openUntil, 0}
