import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Rate limits shared by every service process on the database (src/platform/RateLimit.ts).
 *
 * One row per (bucket, key): the "theoretical arrival time" of the generic cell rate algorithm
 * (GCRA), which is a token bucket of `limit` tokens refilled over `window` kept as one
 * timestamp. `rate_limit_take` takes one token, atomically (the row is locked for the update),
 * with the database's clock, so processes whose clocks differ still agree. A row whose time
 * is past holds a full bucket: it is deleted by a sweep.
 *
 * UNLOGGED: no WAL for a counter that lives for a minute. After a crash, or a failover to a
 * replica (which never receives unlogged tables), the buckets start full again.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE UNLOGGED TABLE rate_limits (
      bucket text NOT NULL,
      key text NOT NULL,
      tat timestamptz NOT NULL,
      PRIMARY KEY (bucket, key)
    )`
  yield* sql`
    CREATE FUNCTION rate_limit_take(p_bucket text, p_key text, p_limit integer, p_window_ms bigint)
    RETURNS TABLE (allowed boolean, remaining integer, reset_ms bigint, retry_after_ms bigint)
    LANGUAGE plpgsql AS $$
    DECLARE
      now_at timestamptz := clock_timestamp();
      emission interval := make_interval(secs => p_window_ms / 1000.0 / p_limit);
      win interval := make_interval(secs => p_window_ms / 1000.0);
      stored timestamptz;
      next_at timestamptz;
    BEGIN
      INSERT INTO rate_limits AS r (bucket, key, tat) VALUES (p_bucket, p_key, now_at)
        ON CONFLICT (bucket, key) DO UPDATE SET tat = r.tat
        RETURNING r.tat INTO stored;
      next_at := greatest(stored, now_at) + emission;
      IF next_at - now_at > win THEN
        allowed := false;
        remaining := 0;
        reset_ms := ceil(extract(epoch FROM (stored - now_at)) * 1000);
        retry_after_ms := ceil(extract(epoch FROM (next_at - win - now_at)) * 1000);
      ELSE
        UPDATE rate_limits SET tat = next_at WHERE bucket = p_bucket AND key = p_key;
        allowed := true;
        remaining := floor(extract(epoch FROM (win - (next_at - now_at))) / extract(epoch FROM emission));
        reset_ms := ceil(extract(epoch FROM (next_at - now_at)) * 1000);
        retry_after_ms := 0;
      END IF;
      RETURN NEXT;
    END $$`
})
