-- claim.lua: hand out a shard's due jobs.
-- KEYS[1] bucket, KEYS[2] the shard's expiring set
-- ARGV[1] now (ms), or "" to read Redis's TIME (production: a claim must
-- never trust another machine's clock), ARGV[2] batch limit, ARGV[3] ready lease (ms),
-- ARGV[4] job key prefix ("<prefix>:{shard}:job:"),
-- ARGV[5] counter key prefix ("<prefix>:{shard}:count:"),
-- ARGV[6] listing index key prefix ("<prefix>:{shard}:idx:"),
-- ARGV[7] how many expired listing entries to drop (0: none this time),
-- ARGV[8] index group key prefix ("<prefix>:{shard}:idg:")
-- It also drops the listing entries of up to ARGV[7] delivered jobs whose
-- records have expired (unless the id was created again since). The
-- expiring set's members are "tenant/topic/id created" (or, written by
-- earlier versions, without the creation time).
-- Each due member is re-scored at now + lease and marked ready: it stays in
-- the bucket until a worker acknowledges it, so a lost hand-out is retried.
-- Reply: {members_and_gens, next, now, swept}: a flat list member1, gen1,
-- member2, ... for the caller to push onto ready lists, the score of the
-- earliest member left in the bucket (false when it is empty), the now used
-- (ms, as a string with microseconds), and how many expired entries it swept.
local now, lease = tonumber(ARGV[1]), tonumber(ARGV[3])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000 -- ms, with its microseconds
end
-- A peek at the first few members by score usually gives both the due ones
-- and the next due time in one command; when more are due than it holds, a
-- whole batch is taken, and the next due time read after the claim.
local batch = tonumber(ARGV[2])
local peek = math.min(batch, 8)
local head = redis.call('ZRANGE', KEYS[1], 0, peek, 'WITHSCORES')
local due, next, reread = {}, false, false
for i = 1, #head, 2 do
  if tonumber(head[i + 1]) > now then
    next = tonumber(head[i + 1])
    break
  end
  due[#due + 1] = head[i]
end
if #due > peek then
  due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, batch)
  reread = true
end
local out, leased, orphans, delta = {}, {}, {}, {}
for _, m in ipairs(due) do
  local jk = ARGV[4] .. m
  local v = redis.call('HMGET', jk, 'st', 'g')
  local st = v[1]
  if not st or st == 'delivered' or st == 'dead' then
    orphans[#orphans + 1] = m -- nothing left to deliver
  else
    if st ~= 'ready' then
      local topic = string.match(m, '^(.*)/[^/]*$')
      local d = delta[topic]
      if not d then
        d = {}
        delta[topic] = d
      end
      d[st] = (d[st] or 0) + 1
      redis.call('HSET', jk, 'st', 'ready')
    end
    leased[#leased + 1] = now + lease
    leased[#leased + 1] = m
    out[#out + 1] = m
    out[#out + 1] = v[2] or '1' -- generation 1 has no 'g'
  end
end
-- one ZADD, one ZREM and one counter update per topic and former state, not per job
if #leased > 0 then
  redis.call('ZADD', KEYS[1], unpack(leased))
end
if #orphans > 0 then
  redis.call('ZREM', KEYS[1], unpack(orphans))
end
for topic, d in pairs(delta) do
  for st, k in pairs(d) do
    redis.call('HINCRBY', ARGV[5] .. topic, st .. '>ready', k)
  end
end
local sweep = tonumber(ARGV[7])
local gone = {}
if sweep > 0 then
  gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, sweep)
end
if #gone > 0 then
  for _, m in ipairs(gone) do
    local member, ca = string.match(m, '^(.*) (%d*)$')
    if not member then
      member = m
    end
    if ca == '' then
      ca = nil
    end
    -- the entry goes unless the job is still there, or created again in
    -- the same ms (one the sweep cannot tell apart)
    local now_ca = redis.call('HGET', ARGV[4] .. member, 'ca')
    if not now_ca or (ca and now_ca ~= ca) then
      local topic, id = string.match(member, '^(.*)/([^/]*)$')
      unindex(ARGV[6] .. topic, ARGV[8] .. topic .. ':', id, ca)
    end
  end
  redis.call('ZREM', KEYS[2], unpack(gone))
end
if reread then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  next = tonumber(first[2])
elseif #leased > 0 and (not next or now + lease < next) then
  -- what was claimed is next due when its lease lapses, if nothing is sooner
  next = now + lease
end
if next then
  next = string.format('%.3f', next)
end
return {out, next, string.format('%.3f', now), #gone}
