/**
 * Writes `batches` with `write`, at most `atOnce` of them out at a time, taken in order; resolves
 * with each batch's answers in the batches' order, flattened. After a failure no further batch
 * begins; the call rejects with the failure that came first in time once the batches already out
 * have settled (so nothing is still being written when the caller hears of it).
 */
export async function writeBatches<T, R>(batches: T[][], atOnce: number, write: (batch: T[]) => Promise<R[]>): Promise<R[]> {
  if (!Number.isInteger(atOnce) || atOnce < 1) throw new RangeError(`atOnce must be a whole number of at least 1, not ${atOnce}`);
  const answers: R[][] = new Array(batches.length);
  let next = 0;
  let failure: { err: unknown } | undefined;
  const lane = async (): Promise<void> => {
    while (next < batches.length && !failure) {
      const i = next++;
      try {
        answers[i] = await write(batches[i]);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, batches.length) }, lane));
  if (failure) throw failure.err;
  return answers.flat();
}

/** `items` cut into batches of at most `size`, in order. */
export const inBatches = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
