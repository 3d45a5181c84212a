-- schedrefill.lua: top up the queues of instants of a batch of a shard's
-- schedules (Store.RefillSchedules), in one call.
-- KEYS[1] the shard's pool, KEYS[2] its wheel (due), KEYS[3] its
-- schedules, KEYS[4] its refill set
-- ARGV[1] now (ms), or '' to read Redis's TIME, ARGV[2] the shard's key
-- tag, ARGV[3] wake horizon (ms); then for each schedule: the topic's
-- handle, the schedule id, the version (gen) the instants were computed
-- for (-1 when the schedule was gone), the hi they were computed after,
-- 1 when Go can compute more instants after the last given (0: the
-- pattern has ended), how many missed instants follow (catch-up "all":
-- each fires), those missed instants (ms), then the next instants after
-- now, ascending, in one argument as the queue stores them (SCH_Q bytes
-- each; '' for none).
-- A schedule leaves the refill set. One gone or changed since (another
-- version or hi, or paused) is left as it is: a claim asks for its refill
-- again if it still needs one. When no occurrence is pending, the first
-- instant becomes the pending one.
-- Reply: {R.ok, earliest}
local pool, due, scheds, refills = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = clock(ARGV[1])
local tag = ARGV[2]
local i = 4
while i <= #ARGV do
  local h, sid, gen, hi, more = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4]
  local missed = tonumber(ARGV[i + 5])
  local first = i + 6
  local nexts = ARGV[first + missed]
  i = first + missed + 1
  local sf = h .. '/' .. sid
  redis.call('SREM', refills, sf)
  local s = sget(scheds, tag, sf)
  if s and s.gen == gen and s.hi == hi and not s.pa and not done(s) then
    if s.cur == 0 and s.cu == CU.all then
      for j = first, first + math.min(missed, CATCHUP_MAX) - 1 do
        occur(pool, h, sid, s, tonumber(ARGV[j]), now)
      end
    end
    if nexts ~= '' and (structLib or findStruct()).unpack(SCH_QF, nexts) > s.hi then
      s.qs = s.qs .. nexts
      s.hi = (structLib or findStruct()).unpack(SCH_QF, string.sub(nexts, -SCH_Q))
    end
    s.en = more ~= '1'
    if s.cur == 0 and s.qs ~= '' then
      s.cur = qpop(s)
      occur(pool, h, sid, s, s.cur, now)
    end
    sput(scheds, s)
  end
end
indexFlush(tag)
countFlush(tag)
return {R.ok, earliestOf(due, wheelFlush(tag, due), now + tonumber(ARGV[3]))}
