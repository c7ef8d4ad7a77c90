import { RunContext, Step, Workflow } from '../../src';
import { createApp, ident, sql, waitFor } from '../support';

@Workflow('results_bad_return')
class BadReturn {
  @Step({ retry: { attempts: 1 } })
  async bad() {
    return { n: BigInt(1) };
  }
}

@Workflow('results_cyclic_return')
class CyclicReturn {
  @Step({ retry: { attempts: 1 } })
  async bad() {
    const o: Record<string, unknown> = {};
    o.self = o;
    return o;
  }
}

@Workflow('results_bad_put')
class BadPut {
  @Step({ retry: { attempts: 1 } })
  async first(ctx: RunContext) {
    ctx.put('n', BigInt(2));
    return 'ok';
  }

  @Step()
  async second() {
    return 'never';
  }
}

let nulExecuted = 0;

@Workflow('results_nul_string')
class NulString {
  @Step({ retry: { attempts: 1 } })
  async scrape() {
    nulExecuted++;
    return { text: 'before\u0000after' };
  }
}

let poisonExecuted = 0;

@Workflow('results_poison')
class Poison {
  @Step({ retry: { attempts: 1 } })
  async only() {
    poisonExecuted++;
    return 'poison';
  }
}

@Workflow('results_good')
class Good {
  @Step()
  async first() {
    return undefined;
  }

  @Step()
  async second(ctx: RunContext<{ v: unknown }>) {
    return ctx.input.v;
  }
}

const thrown: Record<string, () => unknown> = {
  string: () => 'just a string',
  undefined: () => undefined,
  null: () => null,
  object: () => ({ code: 42, detail: 'plain object' }),
  cyclic: () => {
    const e = new Error('cyclic cause') as Error & { self?: unknown };
    e.self = e;
    return e;
  },
  bigint: () => Object.assign(new Error('with a bigint property'), { amount: BigInt(10) }),
  'an Error whose message has a NUL character': () => new Error('bad \u0000 byte'),
};

@Workflow('results_throws')
class Throws {
  @Step({ retry: { attempts: 1 } })
  async boom(ctx: RunContext<{ kind: string }>) {
    throw thrown[ctx.input.kind]();
  }
}

describe('step return values and context', () => {
  it.each(Object.keys(thrown))('a step that throws %s fails its run with a recorded error', async (kind) => {
    const { durable } = await createApp({ workflows: [Throws, Good] });
    const { runId } = await durable.start('results_throws', { kind });
    const run = await durable.waitForRun(runId, { timeout: 10_000 });
    expect(run.status).toBe('failed');
    expect(run.error).not.toBeNull();
    const after = await durable.start('results_good', { v: kind });
    expect((await durable.waitForRun(after.runId, { timeout: 10_000 })).result).toBe(kind);
  });

  it('the last step return value is the result; undefined is recorded as null', async () => {
    const { durable } = await createApp({ workflows: [Good] });
    const values = [0, '', false, null, 'text', [1, [2]], { a: { b: 'ü😀' } }];
    for (const v of values) {
      const { runId } = await durable.start('results_good', { v });
      expect((await durable.waitForRun(runId, { timeout: 10_000 })).result).toEqual(v);
    }
    const { runId } = await durable.start('results_good', {});
    expect((await durable.waitForRun(runId, { timeout: 10_000 })).result).toBeNull();
  });

  it.each([
    ['returns a BigInt', 'results_bad_return'],
    ['returns a cyclic object', 'results_cyclic_return'],
    ['puts a BigInt into the context', 'results_bad_put'],
    ['returns a string with a NUL character (which Postgres jsonb cannot store)', 'results_nul_string'],
  ])('a step that %s fails its run (it is not left running)', async (_label, workflow) => {
    const { durable } = await createApp({ workflows: [BadReturn, CyclicReturn, BadPut, NulString, Good] });
    const { runId } = await durable.start(workflow);
    const run = await durable.waitForRun(runId, { timeout: 6_000 });
    expect(run.status).toBe('failed');
    expect(run.error).not.toBeNull();
  });

  it("step results of some runs that cannot be stored do not hold up other runs' completions", async () => {
    const { durable } = await createApp({ workflows: [BadReturn, CyclicReturn, BadPut, NulString, Good], concurrency: 10 });
    await Promise.all([durable.start('results_bad_return'), durable.start('results_cyclic_return'), durable.start('results_bad_put')]);
    // two results Postgres cannot store, written one after the other (so not in one batched write)
    nulExecuted = 0;
    await durable.start('results_nul_string');
    await waitFor(() => nulExecuted === 1);
    await durable.start('results_nul_string');
    await waitFor(() => nulExecuted === 2);
    const good = await Promise.all(Array.from({ length: 10 }, (_, v) => durable.start('results_good', { v })));
    const statuses = await Promise.all(
      good.map((g) =>
        durable.waitForRun(g.runId, { timeout: 6_000 }).then(
          (r) => r.status,
          (e: Error) => e.name,
        ),
      ),
    );
    expect(statuses).toEqual(Array(10).fill('completed'));
  });
  // rules of the database (here a trigger, or a check constraint) that refuse any result or error
  // that mentions poison; the failure written in place of the result carries the refusal's reason,
  // which mentions it too
  const raising = (code: string) => (S: string) => [
    `CREATE FUNCTION ${S}.refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.result::text LIKE '%poison%' OR NEW.error->>'message' LIKE '%poison%' THEN
          RAISE EXCEPTION 'refused: it mentions poison'${code};
        END IF;
        RETURN NEW;
      END $$`,
    `CREATE TRIGGER refuse_poison BEFORE UPDATE ON ${S}.runs FOR EACH ROW EXECUTE FUNCTION ${S}.refuse_poison()`,
  ];
  it.each([
    ['a trigger raising a data exception (22023)', raising(" USING ERRCODE = '22023'")],
    ['a trigger raising without a code (P0001)', raising('')],
    [
      'a check constraint (23514)',
      (S: string) => [
        `ALTER TABLE ${S}.runs ADD CONSTRAINT no_poison
           CHECK (coalesce(result::text, '') NOT LIKE '%poison%' AND coalesce(error->>'message', '') NOT LIKE '%poison%')`,
      ],
    ],
  ])('a failure refused in place of a refused outcome is replaced by one without details (%s): the run fails, its step ran once', async (_rule, rule) => {
    const t = await createApp({ workflows: [Poison, Good] });
    for (const statement of rule(ident(t.schema))) await sql(statement);
    poisonExecuted = 0;
    const { runId } = await t.durable.start('results_poison');
    const run = await t.durable.waitForRun(runId, { timeout: 10_000 });
    expect(run.status).toBe('failed');
    expect(run.error).toMatchObject({ code: 'unstorable', message: "the run's outcome could not be stored" });
    expect(poisonExecuted).toBe(1);
    // the step's attempt is in the run's history, failed with the run's error
    expect(await t.durable.getRunHistory(runId)).toMatchObject([{ step: 0, name: 'only', attempt: 1, status: 'failed' }]);
    const after = await t.durable.start('results_good', { v: 'fine' });
    expect((await t.durable.waitForRun(after.runId, { timeout: 10_000 })).result).toBe('fine');
  });

  it('a run whose every end the database refuses stays running on its node, and its step does not run again there', async () => {
    const t = await createApp({ workflows: [Poison, Good] });
    const S = ident(t.schema);
    // a rule that lets no run of this input end, whatever the outcome written
    await sql(`CREATE FUNCTION ${S}.no_end() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.input::text LIKE '%never ends%' AND NEW.status IN ('completed', 'failed') THEN
          RAISE EXCEPTION 'this run may not end';
        END IF;
        RETURN NEW;
      END $$`);
    await sql(`CREATE TRIGGER no_end BEFORE UPDATE ON ${S}.runs FOR EACH ROW EXECUTE FUNCTION ${S}.no_end()`);
    poisonExecuted = 0;
    const { runId } = await t.durable.start('results_poison', { note: 'never ends' });
    await waitFor(() => poisonExecuted === 1);
    // heartbeats that would give back a run the node holds but does not run (200 ms apart here)
    const beats = new Set<string>();
    await waitFor(
      async () => {
        for (const n of await sql<{ at: string }>(`SELECT heartbeat_at::text AS at FROM ${S}.nodes`)) beats.add(n.at);
        return beats.size >= 6;
      },
      { timeout: 20_000, interval: 50 },
    );
    const [row] = await sql<{ status: string; node_id: string | null }>(`SELECT status, node_id FROM ${S}.runs WHERE id = $1`, [runId]);
    expect(row).toMatchObject({ status: 'running', node_id: expect.any(String) });
    expect(poisonExecuted).toBe(1);
    const after = await t.durable.start('results_good', { v: 'fine' });
    expect((await t.durable.waitForRun(after.runId, { timeout: 10_000 })).result).toBe('fine');
  });
});
