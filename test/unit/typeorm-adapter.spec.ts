import type { DataSource } from 'typeorm';
import { createDataSource, pgPoolOf } from '../../src/store/typeorm-adapter';

// What differs between TypeORM 0.3 and 1.x is kept in src/store/typeorm-adapter.ts; the integration
// suite runs it on both majors (npm test on the current one, scripts/compat-test.sh on the other).
describe('typeorm-adapter', () => {
  it('creates an uninitialized postgres DataSource for a url, with no entities', () => {
    const ds = createDataSource('postgres://u@127.0.0.1:1/db');
    expect(ds.isInitialized).toBe(false);
    expect(ds.options).toMatchObject({ type: 'postgres', url: 'postgres://u@127.0.0.1:1/db', entities: [] });
  });

  it('returns the pg pool a postgres driver keeps as driver.master', () => {
    const pool = { connect: () => undefined, query: () => undefined };
    expect(pgPoolOf({ driver: { master: pool } } as unknown as DataSource)).toBe(pool);
  });

  it('refuses a DataSource without a pg pool (not initialized, or another driver) with a clear error', () => {
    for (const driver of [undefined, {}, { master: undefined }, { master: {} }, { master: { query: () => undefined } }]) {
      expect(() => pgPoolOf({ driver } as unknown as DataSource)).toThrow(/no pg pool \(driver\.master\)/);
    }
  });
});
