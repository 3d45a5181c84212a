-- subpause.lua: pause or resume a subscription of a topic.
-- KEYS[1] the topic's subscriptions, KEYS[2] its paused subscriptions
-- ARGV[1] the subscription's name, ARGV[2] 1 to pause, 0 to resume
-- Reply: 0 when there is no such subscription, else 1. Resuming leaves
-- the parked deliveries to the caller, who files them again
-- (Store.PauseSubscription).
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if ARGV[2] == '1' then
  redis.call('SADD', KEYS[2], ARGV[1])
else
  redis.call('SREM', KEYS[2], ARGV[1])
end
return 1
