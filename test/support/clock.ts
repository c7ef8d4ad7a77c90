/** Runs `fn` with this process's `Date.now()` off the real clock (and the database's) by `offsetMs`. */
export async function withClockOff<T>(offsetMs: number, fn: () => Promise<T>): Promise<T> {
  const realNow = Date.now.bind(Date);
  const spy = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + offsetMs);
  try {
    return await fn();
  } finally {
    spy.mockRestore();
  }
}
