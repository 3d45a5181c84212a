-- lease.lua: take or give back shards under a scanner instance's lease
-- (lease.go). The lease hash holds "i:<instance>" -> when its lease
-- expires (ms) and "s:<shard>" -> the instance that holds the shard.
-- KEYS[1] the lease hash
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the instance,
-- ARGV[3] 'take' or 'give', ARGV[4] take: the lease's length (ms), renewed
-- with the call; give: 1 to end the lease as well, ARGV[5] take: how many
-- shards to take at most (give: unused), then the shards to take (free
-- ones: held by no one, by this instance, or by an instance whose lease
-- has expired) or to give back (those this instance holds).
-- Reply: {shards taken or given back, now}. A take also drops the fields
-- of instances whose lease has expired.
local lease, me, mode = KEYS[1], ARGV[2], ARGV[3]
local now, nowStr = clock(ARGV[1])
local done = {}
if mode == 'give' then
  for i = 6, #ARGV do
    local f = 's:' .. ARGV[i]
    if redis.call('HGET', lease, f) == me then
      redis.call('HDEL', lease, f)
      done[#done + 1] = ARGV[i]
    end
  end
  if ARGV[4] == '1' then
    redis.call('HDEL', lease, 'i:' .. me)
  end
  return {done, nowStr}
end
local all = redis.call('HGETALL', lease)
local alive, owner, gone = {}, {}, {}
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  if string.sub(f, 1, 2) == 'i:' then
    if tonumber(v) > now then
      alive[string.sub(f, 3)] = true
    else
      gone[#gone + 1] = f
    end
  else
    owner[string.sub(f, 3)] = v
  end
end
alive[me] = true
local want = tonumber(ARGV[5])
local set = {'i:' .. me, string.format('%d', now + tonumber(ARGV[4]))}
for i = 6, #ARGV do
  if #done >= want then
    break
  end
  local o = owner[ARGV[i]]
  if not o or not alive[o] or o == me then
    set[#set + 1] = 's:' .. ARGV[i]
    set[#set + 1] = me
    done[#done + 1] = ARGV[i]
  end
end
if #gone > 0 then
  redis.call('HDEL', lease, unpack(gone))
end
redis.call('HSET', lease, unpack(set))
return {done, nowStr}
