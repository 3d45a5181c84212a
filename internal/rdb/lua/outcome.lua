-- outcome.lua: record the outcomes of attempts at one shard's jobs
-- (Store.Finish). An outcome changes its job only while the job is active
-- in that attempt: a stale one (its lease lapsed and the job was handed
-- out again, or it was released) changes nothing. A delivered job (and an
-- expired one: its expiry came before its next attempt) keeps
-- its record for the retention period (an entry at its expiry, which the
-- claim that meets it deletes), and may carry its success notification; a
-- retrying one is filed again at its retry time; a dead one joins the dead
-- letters, and may carry its failure notification (so may an expired one).
-- A notification is filed then as a job of its own. The attempt's lease entry
-- goes in every case, so nothing of a finished attempt is left to a claim.
-- KEYS[1] the shard's pool, KEYS[2] its wheel (due), KEYS[3] its leases
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the shard's key
-- tag, ARGV[3] how long a delivered job stays readable (ms), ARGV[4] the
-- wake horizon (ms), then an outcome an argument:
-- "<h>/<id>,<attempt>,<outcome>,<retry at>,<tenant>|<log line>\n[<notice>]"
-- (attempt and retry at in base 36; the notice is "<kind><settings length>|<settings><payload>",
-- kind d for a dead outcome's failure notification, s for a delivered one's success notification)
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

-- notify files the notification note of job id of topic h (of tenant),
-- ended by attempt n, when it is of kind (d: dead, s: delivered): a job
-- "<id>~dead.<n>" or "<id>~ok.<n>" due now. An ended notification of
-- that id (of an earlier job of the same id, within its retention) is
-- replaced as a create replaces an ended job: the new one is told too.
local function notify(h, id, n, note, kind, tenant)
  local k, ls, body = string.match(note, '^(%a)(%d+)|(.*)$')
  if not k then -- no kind: a failure notification of layout 5's outcome lists (migrateOutcomes)
    k, ls, body = 'd', string.match(note, '^(%d+)|(.*)$')
  end
  if k ~= kind or not ls then
    return
  end
  local mark = NOTICE_MARK
  if k == 's' then
    mark = SUCCESS_MARK
  end
  local nid = id .. mark .. string.format('%d', n)
  local field = h .. '/' .. nid
  local old = written[field]
  if old == nil then
    old = redis.call('HGET', pool, field)
  end
  local o = parse(old)
  if not o then
    fileNew(pool, h, nid, newRecord(ST.ready, now, now, 0, tonumber(ls), body), ST.ready, now, now, keepRaw, written,
      false)
    return
  end
  if not ended(o) then -- the earlier one is still on its way
    return
  end
  local ca = replaceEnded(tag, tenant, h, nid, o, NAME[ST.ready], now)
  keepRaw(field, newRecord(ST.ready, ca, now, 0, tonumber(ls), body))
  wheelPut(field, now, now)
  indexAdd(h, nid, ca)
end

local fields, ns, ocs, ats, tenants, lines, notes = {}, {}, {}, {}, {}, {}, {}
for i = 5, #ARGV do
  local o = ARGV[i]
  -- the log line ends with a newline; a notice may follow it
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
      if notes[i] and notes[i] ~= '' then
        notify(h, id, r.n, notes[i], 's', tenants[i])
      end
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
        notify(h, id, r.n, notes[i], 'd', tenants[i])
      end
    else
      r.st, r.fa = ST.dead, now
      deadAdd(tag, tenants[i], h, id, now)
      count(h, TO_DEAD[isOccurrence(id)])
      if notes[i] and notes[i] ~= '' then
        notify(h, id, r.n, notes[i], 'd', tenants[i])
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
