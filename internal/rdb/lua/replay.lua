-- replay.lua: give a dead (or expired) job a fresh set of attempts, due
-- now; an expired one loses its expiry. Its
-- attempt numbers go on from the last one: its settings' rb says how many
-- attempts it made before this replay (max_attempts counts from there), and
-- its log gets a line marking the replay (REPLAY_LINE).
-- KEYS[1] the shard's pool, KEYS[2] the shard's wheel (due)
-- ARGV[1] the shard's key tag, ARGV[2] the topic's handle, ARGV[3] id,
-- ARGV[4] now (ms), ARGV[5] tenant
-- Reply: {R.not_found}, {R.not_dead}, or {R.ok, earliest, record} with the
-- job as now stored.
local pool, due, tag, h, id = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
local field = h .. '/' .. id
local r = parse(redis.call('HGET', pool, field))
if not r then
  return {R.not_found}
end
if r.st ~= ST.dead and r.st ~= ST.expired then
  return {R.not_dead}
end
local was = r.st
local now = tonumber(ARGV[4])
-- settings are JSON that Go wrote: an object, or '' for none; "rb":<digits>
-- cannot occur inside one of its strings (a quote there is escaped)
local settings, rb = string.sub(bodyOf(r), 1, r.ls), string.format('"rb":%d', r.n)
local n
if was == ST.expired then
  -- a replay asks for the job now: its expiry is lifted ("ex":<digits>,
  -- which no string of the settings holds either)
  settings, n = string.gsub(settings, ',"ex":%d+', '', 1)
  if n == 0 then
    settings = string.gsub(settings, '"ex":%d+,?', '', 1)
  end
end
settings, n = string.gsub(settings, '"rb":%d+', rb, 1)
if n == 0 then
  if settings == '' or settings == '{}' then
    settings = '{' .. rb .. '}'
  else
    settings = '{' .. rb .. ',' .. string.sub(settings, 2)
  end
end
r.body = settings .. string.sub(r.body, r.ls + 1)
r.ls = #settings
addLog(r, string.format('{"n":%d,"t":%d,' .. REPLAY_LINE, r.n, now))
r.st, r.ra, r.nx, r.fa = ST.ready, now, now, 0
wheelPut(field, now, now)
local v = format(r)
redis.call('HSET', pool, field, v)
if was == ST.dead then
  deadRemove(tag, ARGV[5], h, id)
end
count(h, NAME[was] .. '>ready')
countFlush(tag)
return {R.ok, earliestOf(due, wheelFlush(tag, due), now + 1), v}
