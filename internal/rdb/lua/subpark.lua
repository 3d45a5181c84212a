-- subpark.lua: park a delivery of a paused subscription, unless it was
-- resumed meanwhile. The worker has already given the delivery back with a
-- far due time; parked, it is filed again at resume (Store.PauseSubscription).
-- KEYS[1] the topic's paused subscriptions, KEYS[2] the subscription's parked deliveries
-- ARGV[1] the subscription's name, ARGV[2] the delivery's id, ARGV[3] its run_at (ms)
-- Reply: 1 parked, 0 the subscription is not paused (the caller files it again itself).
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
return 1
