/**
 * The loop of a flow's dependency resolution, as the body of a plpgsql function with parameters
 * `fid`, `names`, `outcomes` and an integer `woke`: resolves every open edge leaving the named
 * nodes — decrements (exact under concurrency: the dependant's row lock serialises its parents) or,
 * per the ignore options, cancels dependants, iterating level by level (no trigger recursion) — and
 * notifies the workers on `channel` when a node became pending. With `reporting`, the id and
 * workflow of each node it cancels are appended to `cancelled_ids` and `cancelled_workflows`
 * (declared by the function).
 */
function resolveLoop(s: string, channel: string, reporting: boolean): string {
  const returning = reporting ? 'r.id, r.name, r.workflow, x.bad' : 'r.id, r.name, x.bad';
  const collect = reporting
    ? `SELECT array_agg(name), coalesce(array_agg(id), '{}'), coalesce(array_agg(workflow), '{}') INTO next_names, c_ids, c_workflows FROM c;
          cancelled_ids := cancelled_ids || c_ids;
          cancelled_workflows := cancelled_workflows || c_workflows;`
    : 'SELECT array_agg(name) INTO next_names FROM c;';
  return `
        LOOP
          EXIT WHEN names IS NULL OR cardinality(names) = 0;
          -- resolve every open edge leaving these nodes, grouped by dependant
          WITH e AS (
            UPDATE ${s}.flow_deps d SET resolved = true, missing = false
            FROM unnest(names, outcomes) AS x(n, o)
            WHERE d.flow_id = fid AND d.dep_name = x.n AND NOT d.resolved
            RETURNING d.run_id, x.o,
              (x.o = 'completed' OR (x.o = 'cancelled' AND d.ignore_cancelled)
                OR (x.o = 'failed' AND d.ignore_failed) OR (x.o = 'deleted' AND d.ignore_deleted)) AS ok
          ), g AS (
            SELECT run_id, (count(*) FILTER (WHERE ok))::int AS oks, (array_agg(o) FILTER (WHERE NOT ok))[1] AS bad
            FROM e GROUP BY run_id
          )
          SELECT array_agg(g.run_id ORDER BY g.run_id), array_agg(g.oks ORDER BY g.run_id), array_agg(g.bad ORDER BY g.run_id),
              count(*) FILTER (WHERE g.bad IS NOT NULL), count(*) FILTER (WHERE g.bad IS NULL AND g.oks > 0)
            INTO ids, oks, bads, nbad, nok
          FROM g;
          EXIT WHEN ids IS NULL;
          -- dependants whose dep counts as completed: one dep fewer; the last one makes them pending
          IF nok > 0 THEN
          WITH w AS (
            UPDATE ${s}.runs r SET
              deps_left = r.deps_left - x.oks,
              status = CASE WHEN r.deps_left - x.oks <= 0 THEN 'pending' ELSE r.status END,
              run_at = CASE WHEN r.deps_left - x.oks <= 0 THEN now() ELSE r.run_at END
            FROM unnest(ids, oks, bads) AS x(id, oks, bad)
            WHERE r.id = x.id AND x.bad IS NULL AND x.oks > 0 AND r.status = 'waiting' AND r.deps_left > 0
            RETURNING r.status
          ) SELECT count(*) FILTER (WHERE status = 'pending') INTO n FROM w;
          woke := woke + n;
          END IF;
          EXIT WHEN nbad = 0;
          -- dependants with a dep that cancels them: cancelled now, hook due; their own dependants next
          PERFORM set_config('durable.flow_resolving', 'on', true);
          WITH c AS (
            UPDATE ${s}.runs r SET status = 'cancelled', finished_at = now(),
              cancel_reason = 'a dependency was ' || x.bad,
              error = jsonb_build_object('name', 'CancelledError', 'code', 'cancelled',
                'message', 'cancelled because a dependency was ' || x.bad, 'reason', x.bad)
            FROM unnest(ids, bads) AS x(id, bad)
            WHERE r.id = x.id AND x.bad IS NOT NULL AND r.status = 'waiting' AND r.deps_left > 0
            RETURNING ${returning}
          ), h AS (
            INSERT INTO ${s}.flow_hooks (run_id, reason) SELECT id, bad FROM c ON CONFLICT DO NOTHING
          )
          ${collect}
          PERFORM set_config('durable.flow_resolving', '', true);
          names := next_names;
          outcomes := CASE WHEN next_names IS NULL THEN NULL ELSE array_fill('cancelled'::text, ARRAY[cardinality(next_names)]) END;
        END LOOP;
        IF woke > 0 THEN PERFORM pg_notify('${channel}', ''); END IF;`;
}

/**
 * `durable_flow_resolve(fid, names, outcomes) RETURNS integer` as the flows migration made it: the
 * resolution loop itself, returning how many nodes woke.
 */
export function flowResolveFunction(s: string, channel: string): string {
  return `
      CREATE OR REPLACE FUNCTION ${s}.durable_flow_resolve(fid text, names text[], outcomes text[]) RETURNS integer
      LANGUAGE plpgsql AS $fn$
      DECLARE
        ids uuid[]; oks int[]; bads text[];
        nbad int; nok int;
        next_names text[];
        woke int := 0;
        n int;
      BEGIN${resolveLoop(s, channel, false)}
        RETURN woke;
      END
      $fn$`;
}

/**
 * `durable_flow_resolve_cascaded(fid, names, outcomes)`: the resolution loop, reporting what it did
 * as one row — `woke` (nodes made pending), and `cancelled_ids` / `cancelled_workflows` (each node it
 * cancelled because a dependency did not complete, its dependants' dependants included), so the
 * caller counts them from its own statement.
 */
export function flowResolveCascadedFunction(s: string, channel: string): string {
  return `
      CREATE OR REPLACE FUNCTION ${s}.durable_flow_resolve_cascaded(fid text, names text[], outcomes text[],
        OUT woke integer, OUT cancelled_ids uuid[], OUT cancelled_workflows text[])
      LANGUAGE plpgsql AS $fn$
      DECLARE
        ids uuid[]; oks int[]; bads text[];
        nbad int; nok int;
        next_names text[];
        c_ids uuid[]; c_workflows text[];
        n int;
      BEGIN
        woke := 0; cancelled_ids := '{}'; cancelled_workflows := '{}';${resolveLoop(s, channel, true)}
      END
      $fn$`;
}

/**
 * `durable_flow_resolve(fid, names, outcomes) RETURNS integer` (the flow triggers' call) as a
 * wrapper of `durable_flow_resolve_cascaded`: one implementation of the loop, and the same
 * signature and result for every caller of the function.
 */
export function flowResolveWrapper(s: string): string {
  return `
      CREATE OR REPLACE FUNCTION ${s}.durable_flow_resolve(fid text, names text[], outcomes text[]) RETURNS integer
      LANGUAGE sql AS $fn$
        SELECT woke FROM ${s}.durable_flow_resolve_cascaded(fid, names, outcomes)
      $fn$`;
}
