-- release.lua: give back jobs of one shard claimed by this process that it
-- will not start (it is stopping, a job waited too long for a free worker,
-- or flow control gave it a later time): each keeps its place (its due
-- time, or the later one) and loses no attempt.
-- KEYS[1] the shard's pool, KEYS[2] the shard's wheel (due), KEYS[3] its leases
-- ARGV[1] the shard's key tag, ARGV[2] now (ms), ARGV[3] wake horizon
-- (ms): a job given back to wait for a later time (flow control) wakes a
-- scanner that sleeps past it; then for each job: its topic's handle, id,
-- the attempt it was claimed for, its due time (ms)
-- A job whose claim is no longer this process's (its lease lapsed, or the
-- job is gone) is left alone. An occurrence given back is taken off its
-- schedule's count of runs (the schedule's hash, <tag>sch, when it has
-- an extension).
-- Reply: {jobs released, earliest}
local pool, due, tag = KEYS[1], KEYS[2], ARGV[1]
local now = tonumber(ARGV[2])
local released = 0
for i = 4, #ARGV, 4 do
  local h, id = ARGV[i], ARGV[i + 1]
  local field = h .. '/' .. id
  local r = parse(redis.call('HGET', pool, field))
  if r and r.st == ST.active and r.n == tonumber(ARGV[i + 2]) then
    r.n = r.n - 1
    r.nx = tonumber(ARGV[i + 3])
    r.st = waiting(r.nx, now)
    local first = fresh(r) -- given back its first attempt since created or replayed
    if not first and r.st == ST.scheduled then
      r.st = ST.retrying
    end
    wheelPut(field, r.nx, now)
    redis.call('HSET', pool, field, format(r))
    redis.call('ZREM', KEYS[3], field)
    local sid = first and scheduleOf(id)
    if sid then
      count(h, OCC .. 'active>' .. NAME[r.st]) -- an occurrence that did not fire after all
      if r.ll == 0 then
        -- its schedule's max_runs counted it (claim.lua, gate): not any more
        local s = sget(tag .. KEY.schedules, tag, h .. '/' .. sid)
        if s and s.x and s.x.rn > 0 then
          s.x.rn = s.x.rn - 1
          sput(tag .. KEY.schedules, s)
        end
      end
    else
      count(h, 'active>' .. NAME[r.st])
    end
    released = released + 1
  end
end
countFlush(tag)
return {released, earliestOf(due, wheelFlush(tag, due), now + tonumber(ARGV[3]))}
