/**
 * How a waiting step reads its event (`EventsStore.receive`): the newest event kept before the
 * wait's end, read through an index on the send's moment, so events of that name kept after the
 * wait's end (kept for a later wait, never its answer) are not read one by one — however many a
 * run has.
 */
import { Client } from 'pg';
import { EventsStore } from '../../src/store/events.store';
import { createApp, databaseUrl, explainingQueryable, ident, migrationRoundTrip, sql } from '../support';

describe('EventsStore.receive', () => {
  it("reads the wait's answer without reading the events kept after the wait's end", async () => {
    const t = await createApp({ workflows: [] });
    const S = ident(t.schema);
    const [run] = await sql<{ id: string }>(`insert into ${S}.runs (id, workflow, status) values (gen_random_uuid(), 'receive_plan', 'running') returning id`);
    const [other] = await sql<{ id: string }>(
      `insert into ${S}.runs (id, workflow, status) values (gen_random_uuid(), 'receive_plan', 'running') returning id`,
    );
    const [{ until }] = await sql<{ until: Date }>(`select now() - interval '1 hour' as until`);
    // kept before the wait's end: three for the run (the newest is its answer), one for another name
    await sql(
      `insert into ${S}.events (run_id, kind, name, payload, created_at)
       select $1, 'event', 'paid', to_jsonb(g), $2::timestamptz - (4 - g) * interval '1 minute' from generate_series(1, 3) g`,
      [run.id, until],
    );
    await sql(
      `insert into ${S}.events (run_id, kind, name, payload, created_at) values ($1, 'event', 'refunded', '"r"', $2::timestamptz - interval '1 second')`,
      [run.id, until],
    );
    // kept after it (not its answer), for this run and the other one
    for (const id of [run.id, other.id]) {
      await sql(
        `insert into ${S}.events (run_id, kind, name, payload, created_at)
         select $1, 'event', 'paid', '"late"', $2::timestamptz + g * interval '1 millisecond' from generate_series(1, 20000) g`,
        [id, until],
      );
    }
    await sql(`analyze ${S}.events`);

    const client = new Client({ connectionString: databaseUrl() });
    await client.connect();
    let read = 0;
    const explaining = explainingQueryable(client, 'events', (rows) => (read += rows));
    try {
      const events = t.get(EventsStore);
      // the other run has nothing before the end: no answer
      expect(await events.receive(explaining, other.id, 'event', 'paid', until)).toBeUndefined();
      expect(read).toBeLessThan(50);
      read = 0;
      // the newest kept before the end is the answer, marked received; read again, the same one
      expect(await events.receive(explaining, run.id, 'event', 'paid', until)).toEqual({ payload: 3 });
      expect(await events.receive(explaining, run.id, 'event', 'paid', until)).toEqual({ payload: 3 });
      expect(read).toBeLessThan(50);
      const received = await sql(`select payload from ${S}.events where run_id = $1 and received_at is not null`, [run.id]);
      expect(received).toEqual([{ payload: 3 }]);
      // a wait without an end gets the newest kept one
      read = 0;
      expect(await events.receive(explaining, other.id, 'event', 'paid', null)).toEqual({ payload: 'late' });
      expect(read).toBeLessThan(50);
    } finally {
      await client.end();
    }
  });

  it('its index: DurableEventsReceiveIndex goes up, down (the index it replaces back) and up again', async () => {
    const { before, up, down, again, twice } = await migrationRoundTrip('DurableEventsReceiveIndex', 'events');
    expect(before.has('events_receive')).toBe(false);
    expect(before.get('events_by_run')).toMatch(/\(run_id, kind, name, id\)$/);
    expect(up.get('events_receive')).toMatch(/\(run_id, kind, name, created_at, id\)$/);
    expect(up.has('events_by_run')).toBe(false);
    expect(down).toEqual(before);
    expect(again).toEqual(up);
    expect(twice).toEqual(up); // re-runnable: up over an upgraded schema changes nothing
  });
});
