import { inBatches, writeBatches } from '../../src/core/in-order-batches';

/** A write whose batches settle only when the test says so; records what is out. */
function controlledWrite() {
  const out = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  const begun: number[] = [];
  const write = (batch: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      const first = batch[0];
      begun.push(first);
      out.set(first, {
        resolve: () => (out.delete(first), resolve(batch.map((n) => `answer ${n}`))),
        reject: (err) => (out.delete(first), reject(err)),
      });
    });
  return { out, begun, write };
}

/** Lets every settled promise's continuations run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('inBatches', () => {
  it('cuts items into batches of at most the size, in order', () => {
    expect(inBatches([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(inBatches([1, 2], 2)).toEqual([[1, 2]]);
    expect(inBatches([], 2)).toEqual([]);
  });
});

describe('writeBatches', () => {
  it.each([0, -1, 1.5, NaN])('refuses %p statements at once before writing anything', async (atOnce) => {
    const { begun, write } = controlledWrite();
    await expect(writeBatches(inBatches([1, 2, 3], 2), atOnce, write)).rejects.toThrow(RangeError);
    expect(begun).toEqual([]);
  });

  it('writes nothing and answers nothing for no batches', async () => {
    const { begun, write } = controlledWrite();
    await expect(writeBatches([], 2, write)).resolves.toEqual([]);
    expect(begun).toEqual([]);
  });

  it('keeps at most the given number of batches out, takes them in order and answers in the batches order', async () => {
    const { out, begun, write } = controlledWrite();
    const done = writeBatches(inBatches([1, 2, 3, 4, 5, 6, 7], 2), 2, write);
    await settle();
    expect(begun).toEqual([1, 3]);
    // the second batch settles first: the third begins in its place, the answers keep their order
    out.get(3)!.resolve();
    await settle();
    expect(begun).toEqual([1, 3, 5]);
    expect(out.size).toBe(2);
    out.get(5)!.resolve();
    await settle();
    out.get(1)!.resolve();
    await settle();
    out.get(7)!.resolve();
    expect(await done).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => `answer ${n}`));
  });

  it('one at a time writes each batch after the previous settled', async () => {
    const { out, begun, write } = controlledWrite();
    const done = writeBatches(inBatches([1, 2, 3], 1), 1, write);
    for (const n of [1, 2, 3]) {
      await settle();
      expect(begun).toEqual([1, 2, 3].slice(0, n));
      out.get(n)!.resolve();
    }
    expect(await done).toEqual(['answer 1', 'answer 2', 'answer 3']);
  });

  it('after a failure begins no further batch and rejects only once the batch still out has settled', async () => {
    const { out, begun, write } = controlledWrite();
    let outcome: unknown;
    const done = writeBatches(inBatches([1, 2, 3, 4, 5, 6], 2), 2, write).then(
      () => (outcome = 'resolved'),
      (err: Error) => (outcome = err.message),
    );
    await settle();
    out.get(3)!.reject(new Error('batch 3 failed'));
    await settle();
    expect(begun).toEqual([1, 3]);
    expect(outcome).toBeUndefined(); // batch 1 is still being written
    out.get(1)!.resolve();
    await done;
    expect(outcome).toBe('batch 3 failed');
    expect(begun).toEqual([1, 3]);
  });

  it('writes nothing for no batches', async () => {
    const { begun, write } = controlledWrite();
    expect(await writeBatches([], 2, write)).toEqual([]);
    expect(begun).toEqual([]);
  });
});
