import { createApp, freshSchema, spawnNode, type NodeProcess, type TestApp } from '../support';
import { Step, Workflow, type OnDuplicate } from '../../src';
import { Pool } from 'pg';
import { databaseUrl } from '../support/db';

/**
 * Races on one key from 4 OS processes (worker: false), 50 concurrent starts each per round, a
 * number of rounds per onDuplicate mode (below): exactly one holder every round, every caller gets the holder's id
 * (or the run the mode answers with) or a typed error, no raw Postgres error, and what each answered
 * start did is in the tables exactly once (re-adds, activity, cancels, the waiting run, kept events).
 * The same inside caller transactions under READ COMMITTED, REPEATABLE READ and SERIALIZABLE, of
 * which 30% roll back: a rolled-back start leaves nothing, and a duplicate never makes the caller's
 * transaction unusable.
 */
@Workflow('racer')
class Racer {
  @Step() async run() {
    return null;
  }
}

const PROCESSES = 4;
const PER_PROCESS = 50;
// 8 rounds per mode, 4 per mode and isolation level, 200 racing starts each (more with the env vars)
const ROUNDS = Number(process.env.KEY_RACE_ROUNDS ?? 8);
const TX_ROUNDS = Number(process.env.KEY_RACE_TX_ROUNDS ?? 4);
/** How far ahead every process is told the instant to fire a round (covers one stdin line to each). */
const START_OFFSET_MS = Number(process.env.KEY_RACE_START_OFFSET_MS ?? 10);
const ISOLATIONS = ['READ COMMITTED', 'REPEATABLE READ', 'SERIALIZABLE'];
const EVENT = 'updated';

/** The modes raced, by name. */
const MODES: Record<string, OnDuplicate> = {
  useExisting: 'useExisting',
  error: 'error',
  cancelExisting: 'cancelExisting',
  runAgain: 'runAgain',
  sendEvent: { sendEvent: EVENT },
};

type Input = { from: string; i: number };
type Result = {
  input: Input;
  runId?: string;
  outcome?: string;
  error?: string;
  code?: string;
  holderId?: string;
  committed: boolean;
  usable?: boolean;
  commitError?: string;
};
type RunRow = {
  id: string;
  status: string;
  holds_key: boolean;
  /** RunInfo.readds: how many (committed) starts found it holding its key. */
  readds: number;
  input: Input;
  error: { replacedBy?: string } | null;
  runs_after_id: string | null;
  wait_kind: string | null;
  inbox: string[];
};
type ActivityRow = { kind: string; run_id: string; details: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- stored JSON
type EventRow = { run_id: string; kind: string; name: string; payload: Input; received: boolean };
/** What the database holds about one key after a round. */
type KeyState = { runs: RunRow[]; activity: ActivityRow[]; events: EventRow[] };
/** A round's odd-round set-up: the holder the starts race against, already going. */
type Prepared = { holderId: string } | undefined;

const tag = (input: Input) => `${input.from}#${input.i}`;
const sorted = (xs: string[]) => [...xs].sort();

describe('keys under races from 4 processes', () => {
  let schema: string;
  /** A starter-only node in this process, to read runs as RunInfo. */
  let app: TestApp;
  let nodes: NodeProcess[];
  let pool: Pool;
  let seq = 0;

  beforeAll(async () => {
    schema = freshSchema();
    // migrate once, then the racers (their boot also runs the migrations: idempotent)
    app = await createApp({ schema, workflows: [Racer], options: { worker: false } });
    nodes = await Promise.all(
      Array.from({ length: PROCESSES }, (_, i) => spawnNode({ schema, nodeId: `racer-${i}`, fixture: 'key-racer.js', readyTimeout: 60_000 })),
    );
    pool = new Pool({ connectionString: databaseUrl(), max: 2 });
  }, 120_000);

  afterAll(async () => {
    await pool?.end();
    await app?.close();
  });

  /**
   * The first line of `node` from index `from` on that starts with `prefix`, as soon as it is printed
   * (woken by the node's stdout, not polled); fails after `timeout` ms or when the node exits.
   */
  function lineOf(node: NodeProcess, from: number, prefix: string, timeout = 60_000): Promise<string> {
    const stdout = node.proc.stdout!;
    return new Promise((resolve, reject) => {
      const done = (err?: Error, line?: string) => {
        clearTimeout(timer);
        stdout.off('data', look);
        node.proc.off('exit', exited);
        if (err) reject(err);
        else resolve(line!);
      };
      // registered after the node's own listener, so `lines` already holds the chunk's lines
      const look = () => {
        for (let i = from; i < node.lines.length; i++) if (node.lines[i].startsWith(prefix)) return done(undefined, node.lines[i]);
      };
      const exited = () => done(new Error(`${node.nodeId} exited before printing ${prefix}: ${node.stderr.join('').slice(-2000)}`));
      const timer = setTimeout(() => done(new Error(`${node.nodeId} did not print ${prefix} within ${timeout} ms`)), timeout);
      stdout.on('data', look);
      node.proc.on('exit', exited);
      if (node.exitCode !== undefined) exited();
      else look();
    });
  }

  /** Fires `PER_PROCESS` starts on every process at the same instant (inside transactions with `tx`); returns all results. */
  async function round(key: string, mode: string, tx?: { isolation: string; rollback: number }): Promise<Result[]> {
    const id = ++seq;
    const at = Date.now() + START_OFFSET_MS;
    const from = nodes.map((node) => node.lines.length);
    for (const node of nodes) node.send(JSON.stringify({ id, key, mode: MODES[mode], n: PER_PROCESS, at, ...tx }));
    const lines = await Promise.all(nodes.map((node, i) => lineOf(node, from[i], `RESULT {"id":${id},`)));
    return lines.flatMap((l) => JSON.parse(l.slice('RESULT '.length)).results as Result[]);
  }

  /** The key's runs (with RunInfo.readds), its activity and the events of its runs. */
  async function keyState(key: string): Promise<KeyState> {
    const S = `"${schema}"`;
    const [runs, infos, activity, events] = await Promise.all([
      pool.query(
        `SELECT id, status, holds_key, input, error, runs_after_id, wait_kind, inbox FROM ${S}.runs
         WHERE workflow = 'racer' AND key = $1 ORDER BY id`,
        [key],
      ),
      app.durable.listRuns({ workflow: 'racer', key, limit: 1000 }),
      pool.query(`SELECT kind, run_id, details FROM ${S}.activity WHERE workflow = 'racer' AND key = $1 ORDER BY id`, [key]),
      pool.query(
        `SELECT e.run_id, e.kind, e.name, e.payload, e.received_at IS NOT NULL AS received
         FROM ${S}.events e JOIN ${S}.runs r ON r.id = e.run_id WHERE r.workflow = 'racer' AND r.key = $1 ORDER BY e.id`,
        [key],
      ),
    ]);
    const readds = new Map(infos.map((r) => [r.id, r.readds]));
    return { runs: runs.rows.map((r) => ({ ...r, readds: readds.get(r.id) })), activity: activity.rows, events: events.rows };
  }

  /**
   * Odd rounds of runAgain and sendEvent race against a holder that is already going: one start
   * (in this process) creates it, then it is picked up (runAgain: one run then waits behind it) or
   * waits for the event (sendEvent: the first answered start delivers it, the later ones are kept).
   */
  async function prepare(key: string, mode: string, i: number): Promise<Prepared> {
    if (i % 2 === 0 || (mode !== 'runAgain' && mode !== 'sendEvent')) return undefined;
    const first = await app.durable.start(Racer, { from: 'test', i: -1 }, { key, onDuplicate: MODES[mode] });
    expect(first.outcome).toBe('created');
    const set = mode === 'runAgain' ? `status = 'running'` : `status = 'waiting', wait_kind = 'event', wait_name = '${EVENT}'`;
    await pool.query(`UPDATE "${schema}".runs SET ${set}, started_at = now() WHERE id = $1`, [first.runId]);
    return { holderId: first.runId };
  }

  /** The one holder of the key (there must be exactly one). */
  function holderOf(s: KeyState): RunRow {
    const holders = s.runs.filter((r) => r.holds_key);
    expect(holders).toHaveLength(1);
    return holders[0];
  }

  /** The key_duplicate activity of the round, each with the given outcome, `count` of them. */
  function duplicates(s: KeyState, outcome: string, count: number): ActivityRow[] {
    const dups = s.activity.filter((a) => a.kind === 'key_duplicate');
    expect(dups.map((a) => a.details.outcome)).toEqual(Array(count).fill(outcome));
    return dups;
  }

  /**
   * What holds in every mode: only typed errors (key_taken only for `error`, serialization_failure
   * only under REPEATABLE READ / SERIALIZABLE), a duplicate leaves the caller's transaction usable,
   * and a rolled-back start's new run is gone.
   */
  function checkCommon(mode: string, s: KeyState, results: Result[], isolation?: string) {
    expect(results).toHaveLength(PROCESSES * PER_PROCESS);
    const allowed = new Set(['key_contended']);
    if (mode === 'error') allowed.add('key_taken');
    if (isolation && isolation !== 'READ COMMITTED') allowed.add('serialization_failure');
    for (const r of results) {
      if (r.error) expect(allowed.has(r.code!) ? r.code : `unexpected ${r.error}: ${r.code}`).toBe(r.code);
      else expect(r.outcome).toBe(r.outcome === 'created' ? 'created' : mode);
    }
    if (isolation) {
      for (const r of results) {
        // a start that lost a serialization race aborted its transaction (documented); every other left it usable
        if (r.code !== 'serialization_failure') expect(r.usable ? 'usable' : `unusable after ${r.outcome ?? r.code}`).toBe('usable');
        // a caller transaction may itself fail at COMMIT only as Postgres does under SERIALIZABLE
        if (r.commitError !== undefined) expect(`${isolation} ${r.commitError}`).toBe('SERIALIZABLE raw:40001');
      }
    }
    const ids = new Set(s.runs.map((r) => r.id));
    for (const r of results.filter((x) => !x.committed && (x.outcome === 'created' || x.outcome === 'cancelExisting'))) {
      expect(ids.has(r.runId!)).toBe(false);
    }
  }

  const check: Record<string, (s: KeyState, results: Result[], prepared: Prepared) => void> = {
    useExisting(s, results) {
      const holder = holderOf(s);
      expect(s.runs.map((r) => r.id)).toEqual([holder.id]);
      const ok = results.filter((r) => r.committed && r.runId);
      expect(ok.filter((r) => r.outcome === 'created').map((r) => r.runId)).toEqual([holder.id]);
      // whoever got an answer other than its own (rolled-back) new run got the holder
      for (const r of results.filter((x) => x.outcome === 'useExisting')) expect(r.runId).toBe(holder.id);
      const answered = ok.filter((r) => r.outcome === 'useExisting').length;
      expect(holder.readds).toBe(answered);
      for (const a of duplicates(s, 'useExisting', answered)) expect(a.run_id).toBe(holder.id);
      expect(s.activity).toHaveLength(answered);
    },
    error(s, results) {
      const holder = holderOf(s);
      expect(s.runs.map((r) => r.id)).toEqual([holder.id]);
      const ok = results.filter((r) => r.committed && r.runId);
      expect(ok.map((r) => r.runId)).toEqual([holder.id]);
      for (const r of results.filter((x) => x.code === 'key_taken')) expect(r.holderId).toBe(holder.id);
      const refused = results.filter((r) => r.committed && r.code === 'key_taken').length;
      expect(holder.readds).toBe(refused);
      for (const a of duplicates(s, 'error', refused)) expect(a.run_id).toBe(holder.id);
      expect(s.activity).toHaveLength(refused);
    },
    cancelExisting(s, results) {
      const holder = holderOf(s);
      expect(holder.status).toBe('pending');
      const ok = results.filter((r) => r.committed && r.runId);
      const created = ok.filter((r) => r.outcome === 'created');
      expect(created).toHaveLength(1);
      // every committed start left its run, and only those are there: the rolled-back ones are gone
      expect(new Set(ok.map((r) => r.runId)).size).toBe(ok.length);
      expect(sorted(s.runs.map((r) => r.id))).toEqual(sorted(ok.map((r) => r.runId!)));
      // one chain of replacements from the first run to the holder, each replaced run cancelled once
      const byId = new Map(s.runs.map((r) => [r.id, r]));
      let at = byId.get(created[0].runId!)!;
      for (let hops = 1; hops < s.runs.length; hops++) {
        expect([at.status, at.holds_key, at.readds]).toEqual(['cancelled', false, 1]);
        at = byId.get(at.error!.replacedBy!)!;
        expect(at).toBeDefined();
      }
      expect(at.id).toBe(holder.id);
      expect(holder.readds).toBe(0);
      const replaced = ok.length - 1;
      expect(ok.filter((r) => r.outcome === 'cancelExisting')).toHaveLength(replaced);
      for (const a of duplicates(s, 'cancelExisting', replaced)) expect(byId.get(a.run_id)!.error!.replacedBy).toBe(a.details.replacedBy);
      const handoffs = s.activity.filter((a) => a.kind === 'key_handed_off');
      expect(sorted(handoffs.map((a) => a.run_id))).toEqual(sorted(ok.filter((r) => r.outcome === 'cancelExisting').map((r) => r.runId!)));
      expect(s.activity).toHaveLength(2 * replaced);
    },
    runAgain(s, results, prepared) {
      const holder = holderOf(s);
      const ok = results.filter((r) => r.committed && r.runId);
      const again = ok.filter((r) => r.outcome === 'runAgain');
      if (!prepared) {
        // the holder was never picked up: it takes the newer input itself, nothing waits behind it
        expect(s.runs.map((r) => r.id)).toEqual([holder.id]);
        expect(ok.filter((r) => r.outcome === 'created').map((r) => r.runId)).toEqual([holder.id]);
        for (const r of results.filter((x) => x.outcome === 'runAgain')) expect(r.runId).toBe(holder.id);
        const inputs = (again.length ? again : ok).map((r) => tag(r.input));
        expect(inputs).toContain(tag(holder.input));
      } else {
        // the holder is running: one run waits behind it with the input of one committed start
        expect(holder.id).toBe(prepared.holderId);
        expect(holder.status).toBe('running');
        expect(ok).toEqual(again);
        const waiting = s.runs.filter((r) => r.id !== holder.id);
        expect(waiting).toHaveLength(again.length ? 1 : 0);
        if (again.length) {
          const [w] = waiting;
          expect([w.status, w.holds_key, w.runs_after_id]).toEqual(['waiting', false, holder.id]);
          for (const r of again) expect(r.runId).toBe(w.id);
          expect(again.map((r) => tag(r.input))).toContain(tag(w.input));
          for (const a of s.activity) expect([a.details.runsAfter, a.details.waitingRunId]).toEqual([holder.id, w.id]);
        }
        for (const r of results.filter((x) => !x.committed && x.outcome === 'runAgain')) {
          if (r.runId !== waiting[0]?.id) expect(s.runs.map((x) => x.id)).not.toContain(r.runId);
        }
      }
      expect(holder.readds).toBe(again.length);
      for (const a of duplicates(s, 'runAgain', again.length)) expect(a.run_id).toBe(holder.id);
      expect(s.activity).toHaveLength(again.length);
    },
    sendEvent(s, results, prepared) {
      const holder = holderOf(s);
      expect(s.runs.map((r) => r.id)).toEqual([holder.id]);
      const ok = results.filter((r) => r.committed && r.runId);
      const sent = ok.filter((r) => r.outcome === 'sendEvent');
      if (prepared) expect(holder.id).toBe(prepared.holderId);
      expect(ok.filter((r) => r.outcome === 'created').map((r) => r.runId)).toEqual(prepared ? [] : [holder.id]);
      for (const r of results.filter((x) => x.outcome === 'sendEvent')) expect(r.runId).toBe(holder.id);
      // the run's input is the first start's; every committed answered start's input is an event on it, once
      if (!prepared) expect(tag(holder.input)).toBe(tag(ok.find((r) => r.outcome === 'created')!.input));
      expect(s.events.every((e) => e.run_id === holder.id && e.kind === 'event' && e.name === EVENT)).toBe(true);
      expect(sorted(s.events.map((e) => tag(e.payload)))).toEqual(sorted(sent.map((r) => tag(r.input))));
      expect(holder.readds).toBe(sent.length);
      const dups = duplicates(s, 'sendEvent', sent.length);
      expect(s.activity).toHaveLength(sent.length);
      for (const a of dups) expect([a.run_id, a.details.event]).toEqual([holder.id, EVENT]);
      // a holder waiting for the event gets the first one (and is pending again); all later ones are kept
      const delivered = prepared && sent.length ? 1 : 0;
      const received = s.events.filter((e) => e.received);
      expect(received).toHaveLength(delivered);
      const deliveries = dups.filter((a) => a.details.delivery === 'delivered');
      expect(deliveries).toHaveLength(delivered);
      expect(dups.filter((a) => a.details.delivery === 'kept')).toHaveLength(sent.length - delivered);
      if (delivered) expect(tag(deliveries[0].details.input)).toBe(tag(received[0].payload));
      expect([holder.status, holder.wait_kind]).toEqual(prepared && !delivered ? ['waiting', 'event'] : ['pending', null]);
      expect(holder.inbox.includes(`event:${EVENT}`)).toBe(sent.length > delivered);
    },
  };

  /** "created ×1, useExisting ×140, rolled back useExisting ×58, …": what a round's starts got, for failure messages. */
  function summary(results: Result[]): string {
    const counts = new Map<string, number>();
    for (const r of results) {
      const what = `${r.committed ? '' : 'rolled back '}${r.outcome ?? r.code}`;
      counts.set(what, (counts.get(what) ?? 0) + 1);
    }
    return [...counts].map(([what, n]) => `${what} ×${n}`).join(', ');
  }

  /**
   * Runs `rounds` rounds of `mode` (inside caller transactions under `isolation`), checking each; a
   * round's check (on its own key) runs while the next round races.
   */
  async function race(mode: string, rounds: number, isolation?: string) {
    let previous: Promise<void> = Promise.resolve();
    for (let i = 0; i < rounds; i++) {
      const key = `${isolation ? `tx:${isolation}:` : ''}${mode}:${i}`;
      const prepared = await prepare(key, mode, i);
      const results = await round(key, mode, isolation ? { isolation, rollback: 0.3 } : undefined);
      await previous;
      previous = keyState(key).then((state) => {
        try {
          checkCommon(mode, state, results, isolation);
          check[mode](state, results, prepared);
        } catch (err) {
          const where = `round ${i} of ${mode}${isolation ? ` (${isolation})` : ''}${prepared ? ' against a going holder' : ''}`;
          throw new Error(`${where}: ${summary(results)}\n${(err as Error).message}`, { cause: err });
        }
      });
      previous.catch(() => undefined); // awaited with the next round, or below
    }
    await previous;
  }

  const label = (mode: string) => (typeof MODES[mode] === 'string' ? mode : JSON.stringify(MODES[mode]));

  for (const mode of Object.keys(MODES)) {
    it(`${label(mode)}: ${ROUNDS} rounds of ${PROCESSES * PER_PROCESS} concurrent starts of one key`, () => race(mode, ROUNDS), 240_000);
  }

  for (const isolation of ISOLATIONS) {
    for (const mode of Object.keys(MODES)) {
      it(`${label(mode)} inside caller transactions (${isolation}, 30% roll back): ${TX_ROUNDS} rounds`, () => race(mode, TX_ROUNDS, isolation), 240_000);
    }
  }
});
