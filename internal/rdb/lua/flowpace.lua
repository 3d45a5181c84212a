-- flowpace.lua: give the jobs of one flow with a rate limit alone
-- (kairos's Topic.Paced), just popped, each its time under the rate, in one
-- call for the whole pop (Store.Pace), so that they need not ask the gate
-- one by one as they come due. Each takes the first free time of the
-- flow's calendar at or after its due time (flow.lua: Rate), and its
-- process holds it until then (code 0 with the time); a job whose time
-- would be more than hold past its due time, or that has waiting jobs
-- ahead of it whose turns come first, waits (code 1 with its turn): it
-- goes back to Redis until then, and is paced again as it is popped.
-- KEYS[1] the flow's pace, KEYS[2] the times taken from its calendar,
-- KEYS[3] its waiting set, KEYS[4] when each waiting job stops counting
-- (flow.lua: newFlow's k)
-- ARGV[1] now (ms), or '' to read Redis's TIME
-- ARGV[2] interval: ms between deliveries (may be fractional)
-- ARGV[3] hold: how far past its due time (ms) a job's time may be for
--   its process to hold it
-- ARGV[4] waitLapse: how long a waiting job still counts after it was
--   expected back (ms)
-- ARGV[5...] the jobs, in wait order, three arguments each: its attempt
--   "<tenant>/<topic>/<id>#<attempt>", its wait order (kairos.WaitOrder,
--   ms) and its due time (ms)
-- Reply: for each job, code and time (ms): 0 go at the time, 1 wait until
-- the time (its turn).
local arg = {
  now = clock(ARGV[1]),
  interval = tonumber(ARGV[2]),
  hold = tonumber(ARGV[3]),
  waitLapse = tonumber(ARGV[4]),
}
local JOBS, PER_JOB = 5, 3

local now = arg.now
local flow = newFlow({pace = KEYS[1], taken = KEYS[2], waitq = KEYS[3], lapses = KEYS[4]}, now, arg.interval, arg.waitLapse)
local out = {}
for i = JOBS, #ARGV, PER_JOB do
  local m, o = ARGV[i], tonumber(ARGV[i + 1]) - WAIT_EPOCH
  local due = math.max(tonumber(ARGV[i + 2]), now)
  local code, at = flow.paced(m, o, due, arg.hold)
  if code == 0 then
    if at < due + 1 then
      at = due -- under a millisecond later (a pace finer than that), as at the gate
    end
    flow.went(m)
  else
    flow.wait(m, o, at)
  end
  out[#out + 1] = code
  out[#out + 1] = string.format('%d', math.ceil(at))
end
flow.close()
return out
