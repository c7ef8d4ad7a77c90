/**
 * A keyed start finds its key's holder with one descent of an index, whatever the statistics say:
 * after a TRUNCATE of a table analyzed while small, a startMany of fresh keys read every holder of
 * the workflow per start (through runs_key_held, filtering on the key), so it grew with the square
 * of the table: 47 s for the eighth batch of 5,000 starts.
 */
import { Step, Workflow } from '../../src';
import { DurableConnection } from '../../src/core/durable.connection';
import { createApp, ident, rowsReadEach, sql } from '../support';

@Workflow('ksp_keyed')
class Keyed {
  @Step()
  async run() {}
}

it('a batch of keyed starts reads its keys, not every holder of the workflow, on a table truncated after an ANALYZE', async () => {
  const t = await createApp({ workflows: [Keyed], options: { worker: false } });
  const S = ident(t.schema);
  await t.durable.start(Keyed, {}, { key: 'first' });
  await sql(`ANALYZE ${S}.runs`);
  await sql(`TRUNCATE ${S}.runs CASCADE`);
  const batch = (b: number) => Array.from({ length: 5000 }, (_, i) => ({ input: {}, key: `k${b}-${i}` }));
  for (let b = 0; b < 3; b++) await t.durable.startMany(Keyed, batch(b));
  // 100 starts, half of them keys already held: the statement that answers them reads a few rows each
  const mixed = Array.from({ length: 100 }, (_, i) => ({ input: {}, key: i % 2 ? `k1-${i}` : `fresh-${i}` }));
  const read = await rowsReadEach(t.get(DurableConnection), 'runs', () => t.durable.startMany(Keyed, mixed));
  expect(Math.max(...read)).toBeLessThan(1_000);
});
