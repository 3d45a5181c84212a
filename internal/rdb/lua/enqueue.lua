-- enqueue.lua: create jobs of one topic and one shard, or replace ones that
-- have not fired yet. One call takes one job (a single create) or many (a
-- batch), so that the script call, the counter updates and the wake-up check
-- are paid once per call rather than once per job.
-- KEYS[1] bucket (ZSET), KEYS[2] topic index (ZSET), KEYS[3] topic counters
-- (HASH), KEYS[4] topic dead letters (ZSET), KEYS[5] the tenant's dead
-- letters (ZSET of members), KEYS[6] every tenant's dead letters
-- ARGV[1] now (ms), or "" to read Redis's TIME (whether a job is due is
-- decided on Redis's clock), ARGV[2] ready lease (ms), ARGV[3] job key
-- prefix ("<prefix>:{shard}:job:"), ARGV[4] member prefix ("tenant/topic/"),
-- ARGV[5] wake horizon (ms): scanners never sleep longer, so a job due later
-- than now + horizon needs no wake-up check, ARGV[6] the topic's index group
-- key prefix (see index.lua),
-- then per job: id, run_at (ms), n, and n field, value pairs.
-- A job's webhook id is derived from its key and creation time by the
-- caller, not stored; hashes written by earlier versions keep their 'uid'.
-- Reply: {results, earliest, now}: results holds one value per job: 0 for
-- a new job scheduled, 1 for a new job due now (generation 1, no stored
-- uid, created at now), else {status, gen, pushed, stored uid or '',
-- created (ms)}, status being 1 for a job created, 2 for a job that had
-- not fired and was replaced, or -1 when the job is being delivered right
-- now and nothing changed; pushed
-- (1) means the job is due now and the caller must push "id|gen" onto the
-- ready list; earliest is the run_at of this call's job that became the
-- shard's earliest member, so a sleeping scanner must be woken, or false;
-- now is the creation time (ms).
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local lease, jobPrefix, memberPrefix = tonumber(ARGV[2]), ARGV[3], ARGV[4]
local horizon = now + tonumber(ARGV[5])
local groups = ARGV[6]
local FIRST = 7 -- the first job's first argument
-- times are written as the strings they arrived as, or are formatted once:
-- a number handed to redis.call is formatted anew each time
local nowStr = string.format('%d', now)
local out, delta, soonest = {}, {}, nil
local function count(field)
  delta[field] = (delta[field] or 0) + 1
end
local function put(status, gen, pushed, uid, created)
  if status == 1 and gen == 1 and created == now and not uid then
    out[#out + 1] = pushed
  else
    out[#out + 1] = {status, gen, pushed, uid or '', created}
  end
end
-- When a call holds several jobs and none of them exists (a batch of new
-- jobs, the common case), one EXISTS over all their keys replaces a read
-- per job. A job whose id comes twice in one call is read on its second
-- turn, as the first has written it by then.
local members, keys, j = {}, {}, FIRST
while j <= #ARGV do
  members[#members + 1] = memberPrefix .. ARGV[j]
  keys[#keys + 1] = jobPrefix .. members[#members]
  j = j + 3 + 2 * tonumber(ARGV[j + 2])
end
local fresh, seen = #keys > 1 and redis.call('EXISTS', unpack(keys)) == 0, {}
-- bucket entries go in one ZADD at the end, and new jobs' index entries in
-- one group or ZADD
local bucket, fresh_ids = {}, {}
local i, nth = FIRST, 0
while i <= #ARGV do
  local id, runAt, n = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  nth = nth + 1
  local member, key = members[nth], keys[nth]
  local old = {}
  if not fresh or seen[id] then
    old = redis.call('HMGET', key, 'st', 'g', 'uid', 'ca')
  end
  seen[id] = true
  -- a job's generation is 1 while its hash has no 'g'
  local st, created, createdStr, uid = old[1], now, nowStr, nil
  local gen = tonumber(old[2] or (st and '1' or '0')) + 1
  if st == 'active' then
    put(-1, 0, 0, '', 0)
  else
    if st then
      if st == 'dead' or st == 'delivered' then
        -- a new job of the same id: the old one leaves the listing
        if st == 'dead' then
          redis.call('ZREM', KEYS[4], id)
          redis.call('ZREM', KEYS[5], member)
          redis.call('ZREM', KEYS[6], member)
        end
        unindex(KEYS[2], groups, id, old[4])
        -- the new job's webhook id comes from its creation time, which
        -- must differ from the old job's even within one ms
        if old[4] and tonumber(old[4]) >= now then
          created = tonumber(old[4]) + 1
          createdStr = string.format('%d', created)
        end
      else
        -- not fired yet: the same job, rescheduled; it keeps its identity
        uid, created, createdStr = old[3], tonumber(old[4]), old[4]
      end
      redis.call('DEL', key)
    end
    if created ~= now then
      if st == 'dead' or st == 'delivered' then
        index(KEYS[2], groups, createdStr, {id}) -- a re-created id, moved a ms on
      end
    elseif not st or st == 'dead' or st == 'delivered' then
      fresh_ids[#fresh_ids + 1] = id
    end
    local state, score, pushed = 'scheduled', runAt, 0
    if runAt <= now then
      state, score, pushed = 'ready', now + lease, 1
    elseif runAt <= horizon and (not soonest or runAt < soonest) then
      soonest = runAt
    end
    -- no attempts yet ('a' absent = 0) and next run = run_at ('na' absent)
    if gen == 1 then
      redis.call('HSET', key, 'st', state, 'ra', ARGV[i + 1], 'ca', createdStr, unpack(ARGV, i + 3, i + 2 + 2 * n))
    elseif not uid then
      redis.call('HSET', key, 'st', state, 'g', gen, 'ra', ARGV[i + 1], 'ca', createdStr,
        unpack(ARGV, i + 3, i + 2 + 2 * n))
    else
      redis.call('HSET', key, 'st', state, 'g', gen, 'ra', ARGV[i + 1], 'ca', createdStr, 'uid', uid,
        unpack(ARGV, i + 3, i + 2 + 2 * n))
    end
    bucket[#bucket + 1] = score
    bucket[#bucket + 1] = member
    if st and st ~= 'delivered' then
      count(st .. '>' .. state)
    else
      count(state)
    end
    local status = 1
    if st and st ~= 'dead' and st ~= 'delivered' then
      status = 2 -- not fired yet: replaced
    end
    put(status, gen, pushed, uid, created)
  end
  i = i + 3 + 2 * n
end
if #bucket > 0 then
  redis.call('ZADD', KEYS[1], unpack(bucket))
end
index(KEYS[2], groups, nowStr, fresh_ids)
for state, n in pairs(delta) do
  if n ~= 0 then
    redis.call('HINCRBY', KEYS[3], state, n)
  end
end
local earliest = false
if soonest then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if tonumber(first[2]) == soonest then
    earliest = soonest
  end
end
return {out, earliest, nowStr}
