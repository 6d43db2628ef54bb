import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Receipts pushed (issue 30, docs/relay.md "Waiting for the outcome"): a trigger announces
 * every operation that reaches a terminal status on channel `das_userops` (payload: its id).
 * NOTIFY is delivered at COMMIT, so a waiter on any service process hears only a settlement
 * that is there to read, whichever code path settled it (the relay, its reconciler, the
 * follower, another process).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION user_operations_settled() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('das_userops', NEW.id);
      RETURN NULL;
    END $$`)
  yield* sql`CREATE TRIGGER user_operations_settled AFTER UPDATE OF status ON user_operations
             FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('included', 'failed'))
             EXECUTE FUNCTION user_operations_settled()`
})
