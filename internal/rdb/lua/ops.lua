-- ops.lua: a tenant's slots for bulk operations (ops.go): at most a few of
-- its operations run at once; the others wait, queued, oldest first. The
-- tenant's running ones are a SET, its queued ones a ZSET by creation.
-- opprefix is the key of an operation's hash less its id.

-- opsRunning counts a tenant's running operations (SET tr), dropping the
-- entries of operations no longer running (finished by a process that
-- kept no such set).
local function opsRunning(tr, opprefix)
  local n = 0
  for _, id in ipairs(redis.call('SMEMBERS', tr)) do
    if redis.call('HGET', opprefix .. id, 'state') == 'running' then
      n = n + 1
    else
      redis.call('SREM', tr, id)
    end
  end
  return n
end

-- opsStart starts the oldest queued operations of a tenant (ZSET tq) while
-- fewer than most run: each becomes running, held by owner for lease (ms)
-- from now, in the running operations (ZSET run) and in tr. It returns
-- their ids.
local function opsStart(run, tr, tq, opprefix, most, owner, now, lease)
  local started = {}
  local n = opsRunning(tr, opprefix)
  while n < most do
    local first = redis.call('ZPOPMIN', tq)
    if #first == 0 then
      break
    end
    local id = first[1]
    if redis.call('HGET', opprefix .. id, 'state') == 'queued' then
      redis.call('HSET', opprefix .. id, 'state', 'running', 'owner', owner)
      redis.call('ZADD', run, now + lease, id)
      redis.call('SADD', tr, id)
      started[#started + 1] = id
      n = n + 1
    end
  end
  return started
end
