-- finish.lua: record the outcomes of attempts on jobs of one shard. One call
-- takes the outcomes that arrived together, so that the call, the counters
-- and the wheel writes are paid once a call rather than once a job.
-- KEYS[1] the shard's pool, KEYS[2] the shard's wheel (due)
-- ARGV[1] the shard's key tag, ARGV[2] now (ms), ARGV[3] wake horizon (ms),
-- then 7 an outcome: the topic's handle, id, attempt number, outcome
-- (OUT.delivered, OUT.retrying or OUT.dead), the attempt's log line (JSON
-- and a newline), next run (ms, for a retry), tenant.
-- An outcome from a stale attempt (its lease lapsed and the job was handed
-- out again, or it was cancelled) changes nothing. A delivered job's nx
-- stays its lease's expiry: the claim that processes the lease's entry
-- files the record's expiry then, in a batch.
-- Reply: {outcomes, earliest}: an outcome each, OUT.stale or the outcome
-- recorded; earliest as in enqueue.lua, for retries.
local pool, due, tag = KEYS[1], KEYS[2], ARGV[1]
local now = tonumber(ARGV[2])
local FIRST, PER = 4, 7
local fields = {}
for i = FIRST, #ARGV, PER do
  fields[#fields + 1] = ARGV[i] .. '/' .. ARGV[i + 1]
end
local vs = redis.call('HMGET', pool, unpack(fields))
local out, hset, written, retried = {}, {}, {}, false
local nth = 0
for i = FIRST, #ARGV, PER do
  nth = nth + 1
  local field, h, id = fields[nth], ARGV[i], ARGV[i + 1]
  local v = vs[nth]
  if written[field] then
    v = written[field]
  end
  local r = parse(v)
  local outcome = tonumber(ARGV[i + 3])
  if not r or r.st ~= ST.active or r.n ~= tonumber(ARGV[i + 2]) then
    out[nth] = OUT.stale
  else
    addLog(r, ARGV[i + 4])
    if outcome == OUT.delivered then
      r.st, r.fa = ST.delivered, now
      count(h, 'active>delivered')
    elseif outcome == OUT.retrying then
      r.st, r.nx = ST.retrying, tonumber(ARGV[i + 5])
      wheelPut(field, r.nx, now)
      count(h, 'active>retrying')
      retried = true
    else
      r.st, r.fa = ST.dead, now
      deadAdd(tag, ARGV[i + 6], h, id, now)
      count(h, 'active>dead')
    end
    local nv = format(r)
    written[field] = nv
    hset[#hset + 1] = field
    hset[#hset + 1] = nv
    out[nth] = outcome
  end
end
if #hset > 0 then
  redis.call('HSET', pool, unpack(hset))
end
countFlush(tag)
local soonest = wheelFlush(tag, due)
local earliest = false
if retried then
  earliest = earliestOf(due, soonest, now + tonumber(ARGV[3]))
end
return {out, earliest}
