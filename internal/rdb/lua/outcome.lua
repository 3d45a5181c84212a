-- outcome.lua: record the outcomes of attempts at one shard's jobs
-- (Store.Finish). An outcome changes its job only while the job is active
-- in that attempt: a stale one (its lease lapsed and the job was handed
-- out again, or it was released) changes nothing. A delivered job (and an
-- expired one: its expiry came before its next attempt) keeps
-- its record for the retention period (an entry at its expiry, which the
-- claim that meets it deletes); a retrying one is filed again at its retry
-- time; a dead one joins the dead letters, and may carry its failure
-- notification, filed then as a job of its own (so may an expired one). The attempt's lease entry
-- goes in every case, so nothing of a finished attempt is left to a claim.
-- KEYS[1] the shard's pool, KEYS[2] its wheel (due), KEYS[3] its leases
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the shard's key
-- tag, ARGV[3] how long a delivered job stays readable (ms), ARGV[4] the
-- wake horizon (ms), then an outcome an argument:
-- "<h>/<id>,<attempt>,<outcome>,<retry at>,<tenant>|<log line>\n[<notice>]"
-- (attempt and retry at in base 36; the notice is "<settings length>|<settings><payload>")
-- Reply: {applied, earliest}: applied holds 1 for each outcome that changed
-- its job and 0 for a stale one, in order; earliest is the earliest wheel
-- score this call wrote when a sleeping scanner must be woken for it
-- (earliestOf), else false.
local pool, due, leases, tag = KEYS[1], KEYS[2], KEYS[3], ARGV[2]
local now = clock(ARGV[1])
local retention = tonumber(ARGV[3])
local written, hset, gone, applied = {}, {}, {}, {}

local function keepRaw(field, v)
  written[field] = v
  hset[#hset + 1] = field
  hset[#hset + 1] = v
  return v
end

-- notify files the failure notification of job id of topic h, dead after
-- attempt n: a job "<id>~dead.<n>" due now.
local function notify(h, id, n, note)
  local ls, body = string.match(note, '^(%d+)|(.*)$')
  if ls then
    fileNew(pool, h, id .. NOTICE_MARK .. string.format('%d', n), newRecord(ST.ready, now, now, 0, tonumber(ls), body),
      ST.ready, now, now, keepRaw, written)
  end
end

local fields, ns, ocs, ats, tenants, lines, notes = {}, {}, {}, {}, {}, {}, {}
for i = 5, #ARGV do
  local o = ARGV[i]
  -- the log line ends with a newline; a failure notice may follow it
  local f, n, oc, at, tenant, line, note = string.match(o, '^([^,|]*),(%w*),(%d),(%w*),([^|]*)|([^\n]*\n)(.*)$')
  if not f then
    f, n, oc, at, tenant, line = string.match(o, '^([^,|]*),(%w*),(%d),(%w*),([^|]*)|(.*)$')
  end
  local k = #fields + 1
  fields[k], ns[k], ocs[k], ats[k], tenants[k], lines[k], notes[k] = f or '', n, oc, at, tenant, line, note
end
if #fields == 0 then
  return {{}, false}
end
local vs = redis.call('HMGET', pool, unpack(fields))
for i, field in ipairs(fields) do
  local v = written[field]
  if v == nil then
    v = vs[i]
  end
  local r = parse(v)
  applied[i] = 0
  if r and r.st == ST.active and r.n == num(ns[i]) then
    local h, id = string.match(field, '^([^/]*)/(.*)$')
    local oc = tonumber(ocs[i])
    gone[#gone + 1] = field
    addLog(r, lines[i])
    if oc == OUT.delivered then
      r.st, r.fa, r.nx = ST.delivered, now, now + retention
      wheelPut(field, r.nx, now)
      count(h, TO_DELIVERED[isOccurrence(id)])
    elseif oc == OUT.retrying then
      r.st, r.nx = ST.retrying, num(ats[i])
      wheelPut(field, r.nx, now)
      count(h, 'active>retrying')
    elseif oc == OUT.expired or oc == OUT.expired_unstarted then
      -- kept for the retention period, as a delivered job; an attempt
      -- handed out but not started is taken back
      if oc == OUT.expired_unstarted then
        r.n = r.n - 1
      end
      r.st, r.fa, r.nx = ST.expired, now, now + retention
      wheelPut(field, r.nx, now)
      count(h, 'active>expired')
      if notes[i] and notes[i] ~= '' then
        notify(h, id, r.n, notes[i])
      end
    else
      r.st, r.fa = ST.dead, now
      deadAdd(tag, tenants[i], h, id, now)
      count(h, TO_DEAD[isOccurrence(id)])
      if notes[i] and notes[i] ~= '' then
        notify(h, id, r.n, notes[i])
      end
    end
    keepRaw(field, format(r))
    applied[i] = 1
  end
end
callMany('HSET', pool, hset)
callMany('ZREM', leases, gone)
indexFlush(tag)
countFlush(tag)
return {applied, earliestOf(due, wheelFlush(tag, due), now + tonumber(ARGV[4]))}
