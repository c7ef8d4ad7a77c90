import { createApp, freshSchema, spawnNode, type NodeProcess } from '../support';
import { Step, Workflow } from '../../src';
import { Pool } from 'pg';
import { databaseUrl } from '../support/db';

/**
 * Races on one key from 4 OS processes (worker: false), 50 concurrent starts each per round: exactly
 * one holder every round, every caller gets the holder's id or a typed error, no raw Postgres error.
 */
@Workflow('racer')
class Racer {
  @Step() async run() {
    return null;
  }
}

const PROCESSES = 4;
const PER_PROCESS = 50;
const ROUNDS = Number(process.env.KEY_RACE_ROUNDS ?? 20);
const TX_ROUNDS = Number(process.env.KEY_RACE_TX_ROUNDS ?? 5);
const TYPED = new Set(['key_taken', 'key_contended', 'serialization_failure']);

type Result = { runId?: string; outcome?: string; error?: string; code?: string; holderId?: string; committed: boolean; usable?: boolean };

describe('keys under races from 4 processes', () => {
  let schema: string;
  let nodes: NodeProcess[];
  let pool: Pool;
  let seq = 0;

  beforeAll(async () => {
    schema = freshSchema();
    // migrate once, then the racers (their boot also runs the migrations: idempotent)
    const app = await createApp({ schema, workflows: [Racer], options: { worker: false } });
    await app.close();
    nodes = await Promise.all(
      Array.from({ length: PROCESSES }, (_, i) => spawnNode({ schema, nodeId: `racer-${i}`, fixture: 'key-racer.js', readyTimeout: 60_000 })),
    );
    pool = new Pool({ connectionString: databaseUrl(), max: 2 });
  }, 120_000);

  afterAll(async () => {
    await pool?.end();
  });

  /** Fires one round on every process at the same instant; returns all results. */
  async function round(key: string, mode: string, tx?: { isolation: string; rollback: number }): Promise<Result[]> {
    const id = ++seq;
    const at = Date.now() + 150;
    for (const n of nodes) n.send(JSON.stringify({ id, key, mode, n: PER_PROCESS, at, ...tx }));
    const lines = await Promise.all(nodes.map((n) => n.waitForLine(new RegExp(`^RESULT \\{"id":${id},`), 60_000)));
    return lines.flatMap((l) => JSON.parse(l.slice('RESULT '.length)).results as Result[]);
  }

  async function keyRows(key: string) {
    const { rows } = await pool.query(`SELECT id, status, holds_key FROM "${schema}".runs WHERE workflow = 'racer' AND key = $1`, [key]);
    return rows as { id: string; status: string; holds_key: boolean }[];
  }

  function assertTyped(results: Result[]) {
    for (const r of results) {
      if (r.error) expect(TYPED.has(r.code!) ? r.code : `untyped ${r.error}: ${r.code}`).toBe(r.code);
    }
  }

  /** A holder that a worker has picked up (runAgain then leaves one run waiting behind it). */
  async function markPickedUp(runId: string) {
    await pool.query(`UPDATE "${schema}".runs SET status = 'running', started_at = now() WHERE id = $1`, [runId]);
  }

  const check: Record<string, (key: string, results: Result[]) => Promise<void>> = {
    async useExisting(key, results) {
      const rows = await keyRows(key);
      const holders = rows.filter((r) => r.holds_key);
      expect(holders).toHaveLength(1);
      expect(rows).toHaveLength(1);
      const committed = results.filter((r) => r.committed && !r.error);
      for (const r of committed) expect(r.runId).toBe(holders[0].id);
    },
    async error(key, results) {
      const rows = await keyRows(key);
      const holders = rows.filter((r) => r.holds_key);
      expect(holders).toHaveLength(1);
      const committed = results.filter((r) => r.committed);
      const created = committed.filter((r) => r.outcome === 'created');
      expect(created.length).toBeLessThanOrEqual(1);
      if (created.length) expect(created[0].runId).toBe(holders[0].id);
      for (const r of committed.filter((x) => x.code === 'key_taken')) expect(r.holderId).toBe(holders[0].id);
    },
    async cancelExisting(key, results) {
      const rows = await keyRows(key);
      const holders = rows.filter((r) => r.holds_key);
      expect(holders).toHaveLength(1);
      // every other run of the key was cancelled (replaced); only the holder is still going
      expect(rows.filter((r) => r.status !== 'cancelled').map((r) => r.id)).toEqual([holders[0].id]);
      const ids = results.filter((r) => r.committed && r.runId).map((r) => r.runId!);
      expect(new Set(ids).size).toBe(ids.length);
      for (const id of ids) expect(rows.map((r) => r.id)).toContain(id);
    },
    async runAgain(key, results) {
      const rows = await keyRows(key);
      const holders = rows.filter((r) => r.holds_key);
      expect(holders).toHaveLength(1);
      const waiting = rows.filter((r) => !r.holds_key && r.status === 'waiting');
      expect(waiting.length).toBeLessThanOrEqual(1);
      expect(rows).toHaveLength(1 + waiting.length);
      for (const r of results.filter((x) => x.committed && x.runId)) expect([holders[0].id, waiting[0]?.id]).toContain(r.runId);
    },
  };

  for (const mode of Object.keys(check)) {
    it(`${mode}: ${ROUNDS} rounds of ${PROCESSES * PER_PROCESS} concurrent starts of one key`, async () => {
      for (let i = 0; i < ROUNDS; i++) {
        const key = `${mode}:${i}`;
        if (mode === 'runAgain' && i % 2 === 1) {
          // odd rounds: the holder is already running, so the starts leave one run waiting behind it
          const [first] = await round(key, mode).then((r) => r.filter((x) => x.outcome === 'created'));
          await markPickedUp(first.runId!);
        }
        const results = await round(key, mode);
        expect(results).toHaveLength(PROCESSES * PER_PROCESS);
        assertTyped(results);
        await check[mode](key, results);
      }
    }, 240_000);
  }

  for (const isolation of ['READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE']) {
    for (const mode of ['useExisting', 'error', 'cancelExisting']) {
      it(`${mode} inside caller transactions (${isolation}, 30% roll back): ${TX_ROUNDS} rounds`, async () => {
        for (let i = 0; i < TX_ROUNDS; i++) {
          const key = `tx:${isolation}:${mode}:${i}`;
          const results = await round(key, mode, { isolation, rollback: 0.3 });
          expect(results).toHaveLength(PROCESSES * PER_PROCESS);
          assertTyped(results);
          // a duplicate never leaves the caller's transaction unusable (a lost serialization race aborts it, as documented)
          for (const r of results) expect(r.usable ?? true).toBe(true);
          const rows = await keyRows(key);
          expect(rows.filter((r) => r.holds_key).length).toBeLessThanOrEqual(1);
          const committed = results.filter((r) => r.committed && r.runId);
          for (const r of committed) expect(rows.map((x) => x.id)).toContain(r.runId);
          if (mode === 'useExisting' && committed.length) {
            const holder = rows.find((r) => r.holds_key)!;
            for (const r of committed) expect(r.runId).toBe(holder.id);
          }
          if (isolation === 'READ COMMITTED') expect(results.some((r) => r.code === 'serialization_failure')).toBe(false);
        }
      }, 240_000);
    }
  }
});
