import type { QueryRunner } from 'typeorm';
import { DurableMigration } from './durable-migration';

/**
 * The module's first schema: runs (with the key columns and the partial unique index that makes
 * "one holder per key per workflow" a database rule), node heartbeats, `ctx.transaction` memos and
 * the activity log. Every statement is idempotent so it can also run under a user's own runner.
 */
export class DurableInit1733040000000 extends DurableMigration {
  name = 'DurableInit1733040000000';

  async up(q: QueryRunner): Promise<void> {
    const { s } = this;
    await q.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.runs (
        id            uuid PRIMARY KEY,
        workflow      text NOT NULL,
        key           text,
        holds_key     boolean NOT NULL DEFAULT false,
        status        text NOT NULL DEFAULT 'pending',
        input         jsonb,
        context       jsonb NOT NULL DEFAULT '{}',
        result        jsonb,
        results       jsonb NOT NULL DEFAULT '{}',
        error         jsonb,
        step          integer NOT NULL DEFAULT 0,
        attempt       integer NOT NULL DEFAULT 0,
        run_at        timestamptz NOT NULL DEFAULT now(),
        timeout_ms    integer,
        deadline_at   timestamptz,
        node_id       text,
        epoch         integer NOT NULL DEFAULT 0,
        cancel_reason text,
        parent_id     uuid,
        flow_id       text,
        flow_name     text,
        name          text,
        deps          text[],
        runs_after_id uuid,
        readds        integer NOT NULL DEFAULT 0,
        trace         jsonb,
        created_at    timestamptz NOT NULL DEFAULT now(),
        started_at    timestamptz,
        finished_at   timestamptz,
        CONSTRAINT runs_key_bytes CHECK (key IS NULL OR octet_length(key) BETWEEN 1 AND 255),
        CONSTRAINT runs_holder_has_key CHECK (NOT holds_key OR key IS NOT NULL)
      ) WITH (fillfactor = 80)`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS runs_key_holder ON ${s}.runs (workflow, key) WHERE holds_key`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_by_key ON ${s}.runs (workflow, key) WHERE key IS NOT NULL`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_due ON ${s}.runs (run_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_running ON ${s}.runs (node_id) WHERE status = 'running'`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_finished ON ${s}.runs (finished_at) WHERE finished_at IS NOT NULL`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_parent ON ${s}.runs (parent_id) WHERE parent_id IS NOT NULL`);
    await q.query(`CREATE INDEX IF NOT EXISTS runs_flow ON ${s}.runs (flow_id, name) WHERE flow_id IS NOT NULL`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.nodes (
        id           text PRIMARY KEY,
        started_at   timestamptz NOT NULL DEFAULT now(),
        heartbeat_at timestamptz NOT NULL DEFAULT now(),
        info         jsonb NOT NULL DEFAULT '{}'
      )`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.memos (
        run_id     uuid NOT NULL REFERENCES ${s}.runs (id) ON DELETE CASCADE,
        step       integer NOT NULL,
        call       integer NOT NULL,
        result     jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (run_id, step, call)
      )`);
    await q.query(`
      CREATE TABLE IF NOT EXISTS ${s}.activity (
        id       bigserial PRIMARY KEY,
        kind     text NOT NULL,
        run_id   uuid,
        workflow text,
        key      text,
        at       timestamptz NOT NULL DEFAULT now(),
        details  jsonb NOT NULL DEFAULT '{}'
      )`);
    await q.query(`CREATE INDEX IF NOT EXISTS activity_at ON ${s}.activity (at)`);
    await q.query(`CREATE INDEX IF NOT EXISTS activity_key ON ${s}.activity (workflow, key, at)`);
    await q.query(`CREATE INDEX IF NOT EXISTS activity_run ON ${s}.activity (run_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    const { s } = this;
    for (const t of ['activity', 'memos', 'nodes', 'runs']) await q.query(`DROP TABLE IF EXISTS ${s}.${t}`);
  }
}
