/**
 * What the engine does with an error of its own, outside a step's body: the run fails for good
 * with it, once — not claimed again and again with its attempt given back each time.
 */
import { RunContext, Step, Workflow } from '../../src';
import { createApp, ident, RecordingLogger, sql } from '../support';

const entered: Record<string, number> = {};

@Workflow('ee_odd_throw')
class OddThrow {
  @Step({ retry: { attempts: 1 } })
  async a(ctx: RunContext) {
    entered[ctx.runId] = (entered[ctx.runId] ?? 0) + 1;
    // neither JSON (a BigInt) nor String (no prototype) can render it
    throw Object.assign(Object.create(null), { big: 1n });
  }
}

@Workflow('ee_fails')
class Fails {
  @Step({ retry: { attempts: 3 } })
  async a(ctx: RunContext) {
    entered[ctx.runId] = (entered[ctx.runId] ?? 0) + 1;
    throw new Error('step failed');
  }
}

@Workflow('ee_saga')
class Saga {
  @Step({ compensate: 'undoA', retry: { attempts: 1 } })
  async a() {
    return 'a';
  }

  @Step({ retry: { attempts: 1 } })
  async b() {
    throw new Error('b failed');
  }

  async undoA() {
    throw new Error('undo failed');
  }
}

/**
 * A logger that throws at the debug line of a failed attempt of `ee_fails` and at the error line
 * of a compensation that failed for good: errors of the engine's own, after a body.
 */
class BrokenLogger extends RecordingLogger {
  override readonly debug = (message: unknown): void => {
    if (String(message).includes('ee_fails')) throw new Error('the logger broke');
  };

  override readonly error = (message: unknown, ...rest: unknown[]): void => {
    if (String(message).includes('compensation "undoA" failed for good')) throw new Error('the logger broke');
    this.entries.push({ level: 'error', message: String(message), rest });
  };
}

/** The run's row, as the database has it. */
async function rowOf(schema: string, runId: string) {
  const [row] = await sql<{ status: string; attempt: number; epoch: number }>(`SELECT status, attempt, epoch FROM ${ident(schema)}.runs WHERE id = $1`, [
    runId,
  ]);
  return row;
}

describe('an error of the engine outside a step body', () => {
  const logger = new BrokenLogger();

  it('a step that throws what neither JSON nor String can render fails once, its error recorded', async () => {
    const t = await createApp({ workflows: [OddThrow], logger });
    const { runId } = await t.durable.start(OddThrow, {});
    const run = await t.durable.waitForRun(runId, { timeout: 10_000 });
    expect(run).toMatchObject({ status: 'failed', attempt: 1, error: { name: 'Error', message: '[object Object]', step: 'a' } });
    expect(entered[runId]).toBe(1);
    expect((await rowOf(t.schema, runId)).epoch).toBe(1);
  });

  it('fails the run for good with code internal, after one execution of the body', async () => {
    const t = await createApp({ workflows: [Fails], logger });
    const { runId } = await t.durable.start(Fails, {});
    const run = await t.durable.waitForRun(runId, { timeout: 10_000 });
    expect(run).toMatchObject({ status: 'failed', error: { name: 'Error', message: 'the logger broke', code: 'internal' } });
    expect(entered[runId]).toBe(1);
    // not claimed again: one claim, its attempt counted
    expect(await rowOf(t.schema, runId)).toMatchObject({ status: 'failed', attempt: 1, epoch: 1 });
    expect(logger.find('error', `run ${runId} (ee_fails): Error: the logger broke`)).toHaveLength(1);
  });

  it('while compensating, fails the compensation: the run keeps its failure, the internal error is the compensation’s', async () => {
    const t = await createApp({ workflows: [Saga], logger });
    const { runId } = await t.durable.start(Saga, {});
    const run = await t.durable.waitForRun(runId, { timeout: 10_000 });
    expect(run).toMatchObject({
      status: 'compensation_failed',
      error: {
        message: 'b failed',
        step: 'b',
        compensation: { step: 'a', method: 'undoA', attempt: 1, error: { message: 'the logger broke', code: 'internal' } },
      },
    });
  });
});
