-- tenantpending.lua: count, in one shard, each tenant's pending jobs from
-- its topics' counters, for a Redis whose jobs predate the tenant counts
-- (layout.go, "Tenant quotas"). Exact whatever runs beside it: the
-- counters and the tenant counts change together, in scripts of this slot.
-- KEYS[1] the shard's topic tenants (ht), KEYS[2] its tenant pending counts (tp)
-- ARGV[1] the shard's key tag, then pairs: a topic handle, its tenant
-- Reply: the number of tenants counted
local tag = ARGV[1]
local sums = {}
for i = 2, #ARGV, 2 do
  local h, tenant = ARGV[i], ARGV[i + 1]
  redis.call('HSETNX', KEYS[1], h, tenant)
  local all = redis.call('HGETALL', tag .. KEY.counters .. h)
  local n = sums[tenant] or 0
  for j = 1, #all, 2 do
    n = n + pendingOf(all[j], tonumber(all[j + 1]))
  end
  sums[tenant] = n
end
local tenants = 0
for tenant, n in pairs(sums) do
  redis.call('HSET', KEYS[2], tenant, n)
  tenants = tenants + 1
end
return tenants
