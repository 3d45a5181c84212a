-- revoke.lua: revoke API tokens, so that a revocation only ever tightens: a
-- tenant's cutoff keeps the later of its time and the one asked for, and a
-- token revoked stays revoked. The list's version counts real changes only.
-- KEYS[1] the revoked tokens' hash
-- ARGV[1] the field: 't:' .. tenant (a cutoff) or 'i:' .. tenant .. '/' .. jti (one token)
-- ARGV[2] its value: the cutoff in unix seconds, or '1'
-- Reply: the value in force (a cutoff later than ARGV[2] when one was)
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old and (string.sub(ARGV[1], 1, #REVOKED.tenant) ~= REVOKED.tenant or tonumber(old) >= tonumber(ARGV[2])) then
  return old
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[1], REVOKED.version, 1)
return ARGV[2]
