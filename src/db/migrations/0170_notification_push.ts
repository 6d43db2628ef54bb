import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Push delivery of notifications (docs/notifications.md).
 *
 * - `notifications.seq`: a per-database order, the SSE event id (`Last-Event-ID` resumes after it).
 * - A trigger announces every new notification on channel `das_notifications` (delivered at
 *   COMMIT, so every service process hears only committed rows) and writes one outbox row per
 *   live webhook endpoint of the signer IN THE SAME TRANSACTION as the notification: a
 *   delivery is never lost, whichever code path wrote the notification.
 * - `webhook_deliveries` is the outbox (leased with FOR UPDATE SKIP LOCKED); `webhook_attempts`
 *   records every try.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE notifications ADD COLUMN seq bigserial`
  yield* sql`CREATE UNIQUE INDEX notifications_signer_seq ON notifications (signer_address, seq)`
  yield* sql`
    CREATE TABLE webhook_endpoints (
      id text PRIMARY KEY,
      signer_address text NOT NULL,
      url text NOT NULL,
      secret text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      rotated_at timestamptz,
      deleted_at timestamptz
    )`
  yield* sql`CREATE INDEX webhook_endpoints_signer ON webhook_endpoints (signer_address) WHERE deleted_at IS NULL`
  yield* sql`
    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      endpoint_id text NOT NULL REFERENCES webhook_endpoints (id),
      notification_id text NOT NULL REFERENCES notifications (id),
      signer_address text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
      attempts integer NOT NULL DEFAULT 0,
      -- attempts at the last replay: a replayed delivery gets the full number of tries again.
      replayed_from integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      leased_until timestamptz,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz,
      UNIQUE (endpoint_id, notification_id)
    )`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at DESC)`
  yield* sql`
    CREATE TABLE webhook_attempts (
      delivery_id text NOT NULL REFERENCES webhook_deliveries (id),
      attempt integer NOT NULL,
      at timestamptz NOT NULL,
      status_code integer,
      error text,
      duration_ms integer NOT NULL,
      PRIMARY KEY (delivery_id, attempt)
    )`
  yield* sql.unsafe(`
    CREATE FUNCTION notifications_push() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO webhook_deliveries (id, endpoint_id, notification_id, signer_address)
        SELECT 'whd_' || gen_random_uuid(), e.id, NEW.id, NEW.signer_address
        FROM webhook_endpoints e
        WHERE e.signer_address = NEW.signer_address AND e.deleted_at IS NULL;
      PERFORM pg_notify('das_notifications', NEW.seq::text || ':' || NEW.signer_address);
      RETURN NULL;
    END $$`)
  yield* sql`CREATE TRIGGER notifications_push AFTER INSERT ON notifications
             FOR EACH ROW EXECUTE FUNCTION notifications_push()`
})
