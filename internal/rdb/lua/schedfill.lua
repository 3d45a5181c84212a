-- schedfill.lua: backfill a schedule: file an occurrence for each instant
-- given, due at once, unless a job of its id exists (the instant fired
-- already, by the pattern, a trigger or a backfill, and its job is kept
-- for the retention period, or it is pending). The claims that fire them
-- count them against max_runs.
-- KEYS[1] the shard's pool, KEYS[2] its wheel (due), KEYS[3] its schedules,
-- KEYS[4] its handles of deleted topics (gone)
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the shard's key
-- tag, ARGV[3] the topic's handle, ARGV[4] the schedule id, ARGV[5] wake
-- horizon (ms); then the instants (ms, as the occurrences' ids name them),
-- ascending.
-- Only instants before the pending occurrence, and not after now, are
-- filed: the pattern fires the others itself, and a job filed under the id
-- of one it files later would leave it nothing to chain from.
-- Reply: {R.ok, filed, the last instant filed (0 when none), earliest};
-- {R.not_found}; {R_COMPLETED} when the schedule fired its max_runs;
-- {R.topic_gone}.
local pool, due, scheds = KEYS[1], KEYS[2], KEYS[3]
if redis.call('SISMEMBER', KEYS[4], ARGV[3]) == 1 then
  return {R.topic_gone}
end
local now = clock(ARGV[1])
local tag, h, sid = ARGV[2], ARGV[3], ARGV[4]
local s = sget(scheds, tag, h .. '/' .. sid)
if not s then
  return {R.not_found}
end
if done(s) then
  return {R_COMPLETED}
end
local filed, last = 0, 0
-- with max_runs, no more than the runs left: the instants filed here are
-- due at once and fire before the pending occurrence, which the claim then
-- drops if the runs are spent (an earlier backfill not fired yet is not
-- counted here; its claim drops what exceeds max_runs)
local room = math.huge
if s.x and s.x.mr > 0 then
  room = s.x.mr - s.x.rn
end
local fields, ts = {}, {}
for i = 6, #ARGV do
  local t = tonumber(ARGV[i])
  if t > now or (s.cur ~= 0 and t >= s.cur) then
    break
  end
  fields[#fields + 1] = h .. '/' .. occurrenceID(sid, t)
  ts[#ts + 1] = t
end
if #fields > 0 then
  local ex = redis.call('HMGET', pool, unpack(fields))
  for i, t in ipairs(ts) do
    if not ex[i] and filed < room then
      local st = waiting(t, now)
      fileNew(pool, h, occurrenceID(sid, t), newRecord(st, now, t, s.lt, s.ls, occurrenceBody(s)), st, t, now, nil, nil, false)
      filed, last = filed + 1, t
    end
  end
end
indexFlush(tag)
countFlush(tag)
return {R.ok, filed, last, earliestOf(due, wheelFlush(tag, due), now + tonumber(ARGV[5]))}
