-- enqueue.lua: create jobs of one topic in one shard, or replace ones that
-- have not fired yet. One call takes one job (a single create) or many (a
-- batch): the script call, the pool write, the counters and the wheel
-- writes are paid once a call rather than once a job.
-- KEYS[1] the shard's pool, KEYS[2] the shard's wheel (due), KEYS[3] the
-- shard's handles of deleted topics (gone)
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the shard's key tag
-- ("<prefix>:{s}:"), ARGV[3] the topic's handle, ARGV[4] wake horizon (ms):
-- a job due later needs no wake-up, as scanners never sleep longer, ARGV[5]
-- tenant, ARGV[6] the values a job: 5, or 6 with an option,
-- then a job's: id, run_at (ms), lease timeout (ms), settings length, the
-- settings followed by the payload, and (6) the create's option: '' (replace a
-- job of the id that has not fired), 'k' (keep it), 'b<ms>' (debounce: replace
-- it, its time at most <ms> after its first create), or 'u<ms>:<key>'
-- (dedup: create nothing if a create of <key> took it within <ms>).
-- Reply: {results, earliest, now}: a result a job, R.ok (created now) or
-- {R.ok, created} for a new job of an id used before, {R.replaced,
-- created}, {R.debounced, created, run_at}, {R.kept, record} (nothing
-- changed), {R.duplicate, first id, its record or false when it is gone}
-- (nothing written), or R.active (being delivered: nothing changed);
-- earliest is the processing time of the wheel slot a sleeping scanner
-- must be woken for, or false; now is Redis's time (ms, with
-- microseconds). {R.topic_gone} when the topic was deleted: nothing
-- written.
local pool, due, tag, h = KEYS[1], KEYS[2], ARGV[2], ARGV[3]
if redis.call('SISMEMBER', KEYS[3], h) == 1 then
  return {R.topic_gone}
end
local now, nowStr = clock(ARGV[1])
local FIRST, PER = 7, tonumber(ARGV[6])
local fields = {}
for i = FIRST, #ARGV, PER do
  fields[#fields + 1] = h .. '/' .. ARGV[i]
end
local olds = redis.call('HMGET', pool, unpack(fields))
local written, out, hset, fresh = {}, {}, {}, {}
local nth = 0
for i = FIRST, #ARGV, PER do
  nth = nth + 1
  local id, field = ARGV[i], fields[nth]
  local oldv = written[field] or olds[nth]
  local old = parse(oldv)
  local opt = PER == 6 and ARGV[i + 5] or ''
  local mode, dkey, window, first = opt, nil, 0, nil
  if opt ~= '' then
    mode = string.sub(opt, 1, 1)
  end
  if mode == 'u' then
    -- the key holds "<first id>,<until (ms, base 36)>"; until decides on
    -- the scripts' clock, PX only lets Redis drop it
    local c = string.find(opt, ':', 2, true)
    window = tonumber(string.sub(opt, 2, c - 1))
    dkey = tag .. DEDUP .. h .. ':' .. string.sub(opt, c + 1)
    local held = redis.call('GET', dkey)
    if held then
      local k = string.find(held, ',', 1, true)
      if num(string.sub(held, k + 1)) > now then
        first = string.sub(held, 1, k - 1)
      end
    end
  end
  if first then
    local f = h .. '/' .. first
    out[nth] = {R.duplicate, first, written[f] or redis.call('HGET', pool, f)}
  elseif old and mode == 'k' and not ended(old) then
    out[nth] = {R.kept, oldv}
  elseif old and old.st == ST.active then
    out[nth] = R.active
  else
    local r = {n = 0, ca = now, ra = tonumber(ARGV[i + 1]), fa = 0,
      lt = tonumber(ARGV[i + 2]), ls = tonumber(ARGV[i + 3]), ll = 0, body = ARGV[i + 4]}
    r.nx, r.st = r.ra, waiting(r.ra, now)
    local state = NAME[r.st]
    local result = R.ok
    if not old then
      count(h, state)
    elseif ended(old) then
      r.ca = replaceEnded(tag, ARGV[5], h, id, old, state, now) -- a new job of the same id
    else
      -- not fired yet: the same job, rescheduled; it keeps its identity
      r.ca, result = old.ca, R.replaced
      if mode == 'b' then
        -- debounce: never past the first create's time + max_delay
        r.ra, result = math.min(r.ra, old.ca + tonumber(string.sub(opt, 2))), R.debounced
        r.nx, r.st = r.ra, waiting(r.ra, now)
        state = NAME[r.st]
      end
      if old.st ~= r.st then
        count(h, NAME[old.st] .. '>' .. state)
      end
    end
    if result == R.ok then
      fresh[#fresh + 1] = {id, r.ca}
    end
    if dkey then
      redis.call('SET', dkey, id .. ',' .. b36(now + window), 'PX', window)
    end
    if result == R.ok and r.ca == now then
      out[nth] = R.ok
    elseif result == R.debounced then
      out[nth] = {result, string.format('%d', r.ca), string.format('%d', r.ra)}
    else
      out[nth] = {result, string.format('%d', r.ca)}
    end
    if old then
      labelRemRecord(tag, h, id, old)
    end
    labelAddRecord(tag, h, id, r)
    local v = format(r)
    written[field] = v
    hset[#hset + 1] = field
    hset[#hset + 1] = v
    wheelPut(field, r.nx, now)
  end
end
if #hset > 0 then
  redis.call('HSET', pool, unpack(hset))
end
index(tag, h, fresh)
countFlush(tag)
local earliest = earliestOf(due, wheelFlush(tag, due), now + tonumber(ARGV[4]))
return {out, earliest, nowStr}
