/**
 * `explainStart`: what a start would do now and why, writing nothing. Each explanation is checked
 * against what `start` then does with the same key, for every holder status and `onDuplicate`
 * mode; under concurrent starts it says what was true when it read.
 */
import {
  DurableValidationError,
  KeyTakenError,
  type OnDuplicate,
  type RunStatus,
  type StartExplanation,
  Step,
  UnknownWorkflowError,
  Workflow,
} from '../../src';
import { createApp, ident, sql, TestApp } from '../support';
import { forceStatus } from '../support/keys';

@Workflow('ex_plain')
class Plain {
  @Step()
  async one() {
    return 1;
  }
}

@Workflow('ex_never', { reuse: 'never' })
class Never {
  @Step()
  async one() {
    return 1;
  }
}

@Workflow('ex_debounced', { debounce: { period: '1h' } })
class Debounced {
  @Step()
  async one() {
    return 1;
  }
}

/** Rows of every table a start may write, summed: an explanation must leave it unchanged. */
async function written(t: TestApp): Promise<number> {
  const s = ident(t.schema);
  const [row] = await sql(`SELECT (SELECT count(*) FROM ${s}.runs) + (SELECT count(*) FROM ${s}.activity) + (SELECT count(*) FROM ${s}.events) AS n`);
  return Number(row.n);
}

/** `start` agrees with the explanation given just before it. */
async function expectStartAgrees(t: TestApp, workflow: typeof Plain, key: string, onDuplicate: OnDuplicate | undefined, e: StartExplanation) {
  const started = t.durable.start(workflow, { n: 2 }, { key, onDuplicate });
  if (e.outcome === 'error') {
    const err = await started.then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(KeyTakenError);
    expect((err as KeyTakenError).holderId).toBe(e.holder?.id);
    return;
  }
  const r = await started;
  expect(r.outcome).toBe(e.outcome);
  if (e.runId) expect(r.runId).toBe(e.runId);
  else expect(r.runId).not.toBe(e.holder?.id);
}

const MODES: OnDuplicate[] = ['useExisting', 'error', 'cancelExisting', 'runAgain', { sendEvent: 'more' }];
const STATUSES: (RunStatus | 'none')[] = ['none', 'pending', 'running', 'waiting', 'compensating', 'completed', 'failed', 'cancelled'];

describe('explainStart', () => {
  it('for every holder status and onDuplicate mode, start then does what the explanation said; the explanation writes nothing', async () => {
    const t = await createApp({ workflows: [Plain, Never, Debounced], options: { worker: false } });
    const seen = new Set<string>();
    let cell = 0;
    for (const workflow of [Plain, Never]) {
      for (const status of STATUSES) {
        for (const onDuplicate of MODES) {
          if (workflow === Never && onDuplicate === 'runAgain') continue; // refused: see the validation test
          const key = `cell-${cell++}`;
          if (status !== 'none') {
            const { runId } = await t.durable.start(workflow, { n: 1 }, { key });
            if (status !== 'pending') await forceStatus(t.schema, runId, status);
          }
          const before = await written(t);
          const e = await t.durable.explainStart(workflow, { n: 2 }, { key, onDuplicate });
          expect(await written(t)).toBe(before);
          expect(e.reason.length).toBeGreaterThan(10);
          if (status === 'none') expect([e.outcome, e.holder]).toEqual(['created', undefined]);
          else expect(e.holder?.status).toBe(status);
          seen.add(e.outcome);
          await expectStartAgrees(t, workflow, key, onDuplicate, e);
        }
      }
    }
    expect([...seen].sort()).toEqual(['cancelExisting', 'created', 'error', 'runAgain', 'sendEvent', 'useExisting']);
  });

  it('names the run already waiting behind a holder (runAgain) and a debouncing holder', async () => {
    const t = await createApp({ workflows: [Plain, Debounced], options: { worker: false } });
    const { runId: holder } = await t.durable.start(Plain, {}, { key: 'k' });
    await forceStatus(t.schema, holder, 'running');
    const first = await t.durable.explainStart(Plain, {}, { key: 'k', onDuplicate: 'runAgain' });
    expect(first).toMatchObject({ outcome: 'runAgain', holder: { id: holder, status: 'running' } });
    expect(first.runId).toBeUndefined();
    const waiter = await t.durable.start(Plain, {}, { key: 'k', onDuplicate: 'runAgain' });
    const second = await t.durable.explainStart(Plain, {}, { key: 'k', onDuplicate: 'runAgain' });
    expect(second).toMatchObject({ outcome: 'runAgain', runId: waiter.runId });
    expect(second.reason).toContain(waiter.runId);

    const { runId: debounced } = await t.durable.start(Debounced, { v: 1 }, { key: 'd' });
    const e = await t.durable.explainStart(Debounced, { v: 2 }, { key: 'd' });
    expect(e).toMatchObject({ outcome: 'debounced', runId: debounced });
    await expectStartAgrees(t, Debounced, 'd', undefined, e);
  });

  it('under concurrent starts of the same key, each explanation was true when it read', async () => {
    const t = await createApp({ workflows: [Plain], options: { worker: false } });
    for (let round = 0; round < 20; round++) {
      const key = `race-${round}`;
      const [started, ...explained] = await Promise.all([
        t.durable.start(Plain, {}, { key }),
        ...Array.from({ length: 4 }, () => t.durable.explainStart(Plain, {}, { key })),
      ]);
      for (const e of explained) {
        if (e.holder) expect(e).toMatchObject({ outcome: 'useExisting', runId: started.runId, holder: { id: started.runId } });
        else expect(e).toMatchObject({ outcome: 'created' });
      }
      // afterwards it is settled
      expect(await t.durable.explainStart(Plain, {}, { key })).toMatchObject({ outcome: 'useExisting', runId: started.runId });
    }
  });

  it('refuses a call without a key, a misspelt option, an impossible onDuplicate and an unknown workflow', async () => {
    const t = await createApp({ workflows: [Plain, Never], options: { worker: false } });
    await expect(t.durable.explainStart(Plain, {}, {} as never)).rejects.toThrow(/explainStart ex_plain: key must be a string/);
    await expect(t.durable.explainStart(Plain, {}, { key: 'k', onDuplicat: 'error' } as never)).rejects.toThrow(
      /unknown option "onDuplicat" \(did you mean "onDuplicate"\?\)/,
    );
    await expect(t.durable.explainStart(Never, {}, { key: 'k', onDuplicate: 'runAgain' })).rejects.toBeInstanceOf(DurableValidationError);
    await expect(t.durable.explainStart('ex_nope', {}, { key: 'k' })).rejects.toBeInstanceOf(UnknownWorkflowError);
  });
});
